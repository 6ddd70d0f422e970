"""Retrieval quality on a question set: page-level hit@1, hit@5 and MRR per ranking, the
degraded answer's right-page rate, and the follow-up chains' topic rate.

Every ranking is scored on the same index (same chunks, same tokenizer) in the same run.
A chunk ranking becomes a page ranking by each page's best chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from steps.lib.grounding.followup import Query, follow_up_query, plain_query
from steps.lib.grounding.knowledge import Chunk, Knowledge, chunk_document
from steps.lib.grounding.retrieval import (
    K1,
    LEXICAL_WEIGHT,
    PAGE_WEIGHT,
    bm25_scores,
    cosines,
    degraded_answer,
    lexical_scores,
    normalised,
    order,
    page_bm25_scores,
    ranked_by,
    scores,
)
from steps.lib.grounding.retrieval import (
    grounding as grounding_of,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.offline import compose_reply
from steps.lib.runtime.settings import Settings
from steps.lib.text.prompt import system_text
from steps.lib.text.tokens import terms
from steps.retrieve import TOP_MATCHES, sources_of

Scorer = Callable[[Knowledge, np.ndarray, Query], np.ndarray]
HISTORY_CHARS = Settings().history_turn_max_chars  # what S4 passes
RRF_K = 60  # the constant of the reciprocal rank fusion paper
BEFORE_WEIGHT = 0.15  # the hybrid this issue replaced: cosine + 0.15 x IDF overlap


@dataclass(frozen=True, slots=True)
class QuestionSet:
    questions: tuple[Mapping[str, Any], ...]
    chains: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Scores:
    hit1: float
    hit5: float
    mrr: float


def load_set(path: Path) -> QuestionSet:
    data = json.loads(path.read_text(encoding="utf-8"))
    return QuestionSet(tuple(data["questions"]), tuple(data.get("chains", ())))


def missing_pages(kb: Knowledge, qs: QuestionSet) -> list[str]:
    """Expected pages that the index does not have (a corpus from another version)."""
    expected = {q["page"] for q in qs.questions} | {c["page"] for c in qs.chains}
    return sorted(expected - kb.pages.keys())


def question_query(q: Mapping[str, Any]) -> Query:
    return follow_up_query(q["question"], _history(q), history_chars=HISTORY_CHARS)


# --- the rankings ----------------------------------------------------------------------


def overlap_scores(kb: Knowledge, query: Query) -> np.ndarray:
    """The lexical part this issue replaced: IDF-weighted share of the query's terms present."""
    ids = sorted({kb.vocabulary[t] for t in query.weights if t in kb.vocabulary})
    out = np.zeros(len(kb.chunks), dtype=np.float32)
    if not ids:
        return out
    for term_id in ids:
        out[kb.postings[kb.postings_ptr[term_id] : kb.postings_ptr[term_id + 1]]] += kb.idf[term_id]
    return out / np.float32(kb.idf[ids].sum())


def rrf(kb: Knowledge, vector: np.ndarray, query: Query) -> np.ndarray:
    """Reciprocal rank fusion of the cosine and lexical orders."""
    fused = np.zeros(len(kb.chunks), dtype=np.float64)
    for part in (cosines(kb.matrix, vector), lexical_scores(kb, query)):
        positions = np.empty(len(kb.chunks), dtype=np.float64)
        positions[order(part)] = np.arange(1, len(kb.chunks) + 1)
        fused += 1.0 / (RRF_K + positions)
    return fused


def weighted(weight: float) -> Scorer:
    return lambda kb, v, q: cosines(kb.matrix, v) + np.float32(weight) * lexical_scores(kb, q)


def rankings(extra: Mapping[str, Scorer] | None = None) -> dict[str, Scorer]:
    """The chosen hybrid first, then the baselines and the alternatives it was chosen over."""
    table: dict[str, Scorer] = {
        f"hybrid (chosen): cosine + {LEXICAL_WEIGHT} x (BM25F/max + {PAGE_WEIGHT} x page "
        "BM25/max)": scores,
        f"BM25 (Okapi, k1 {K1}, b 0.75, one field)": lambda kb, v, q: bm25_scores(
            kb, plain_query(q.text), heading_weight=1.0
        ),
        "lexical only (the hybrid's lexical part: chunk + page BM25)": lambda kb, v, q: (
            lexical_scores(kb, q)
        ),
        "cosine only (hashing embedder)": lambda kb, v, q: cosines(kb.matrix, v),
        "reciprocal rank fusion (cosine, lexical part)": rrf,
        f"before: cosine + {BEFORE_WEIGHT} x IDF overlap": lambda kb, v, q: (
            cosines(kb.matrix, v) + np.float32(BEFORE_WEIGHT) * overlap_scores(kb, q)
        ),
    }
    table.update(extra or {})
    return table


# --- the measures ----------------------------------------------------------------------


def page_rank(kb: Knowledge, total: np.ndarray, page: str) -> int:
    """1-based position of `page` in the page ranking (each page at its best chunk)."""
    pages = list(dict.fromkeys(kb.chunks[i].page for i in order(total)))
    return pages.index(page) + 1


def summarise(ranks: Sequence[int]) -> Scores:
    n = len(ranks)
    return Scores(
        sum(r == 1 for r in ranks) / n,
        sum(r <= 5 for r in ranks) / n,
        sum(1 / r for r in ranks) / n,
    )


VectorOf = Callable[[Query], np.ndarray]


def evaluate(
    kb: Knowledge,
    qs: QuestionSet,
    embedder: HashingEmbedder,
    table: Mapping[str, Scorer],
    vector_of: VectorOf | None = None,
) -> dict[str, Scores]:
    """Page-level scores of each ranking; `vector_of` embeds a query another way than
    its one text (the local model's turns apart)."""
    queries = [question_query(q) for q in qs.questions]
    vectors = (
        np.stack([vector_of(query) for query in queries])
        if vector_of
        else embedder.embed([query.text for query in queries])
    )
    result = {}
    for name, scorer in table.items():
        ranks = [
            page_rank(kb, np.asarray(scorer(kb, vector, query)), q["page"])
            for q, query, vector in zip(qs.questions, queries, vectors, strict=True)
        ]
        result[name] = summarise(ranks)
    return result


DegradedPick = Callable[[Knowledge, Query], "str | None"]


def degraded_rate(kb: Knowledge, qs: QuestionSet, pick: DegradedPick | None = None) -> float:
    """Share of questions whose one degraded section comes from the expected page
    (`pick`: another way to choose that page, for comparison)."""
    hits = 0
    for q in qs.questions:
        if pick is None:
            chunk = degraded_answer(kb, question_query(q))
            page = chunk.page if chunk is not None else None
        else:
            page = pick(kb, question_query(q))
        hits += page == q["page"]
    return hits / len(qs.questions)


def best_page(kb: Knowledge, total: np.ndarray) -> str | None:
    return kb.chunks[int(np.argmax(total))].page if total.size and total.max() > 0 else None


def degraded_alternatives() -> dict[str, DegradedPick]:
    """Zero-cost ways to pick the degraded page that were measured and not chosen."""
    return {
        "page BM25 alone (the best whole page)": lambda kb, q: (
            list(kb.pages)[int(np.argmax(page_bm25_scores(kb, q)))]
            if page_bm25_scores(kb, q).max() > 0
            else None
        ),
        "chunk BM25 alone": lambda kb, q: best_page(kb, bm25_scores(kb, q)),
        f"lexical part + {ROCCHIO_WEIGHT} x cosine to the mean vector of its top "
        f"{ROCCHIO_TOP} chunks (feedback through the index's own vectors, no query "
        "embedding)": lambda kb, q: best_page(kb, rocchio(kb, lexical_scores(kb, q))),
    }


ROCCHIO_TOP = 5
ROCCHIO_WEIGHT = 0.3


def rocchio(kb: Knowledge, lexical: np.ndarray) -> np.ndarray:
    """lexical + ROCCHIO_WEIGHT x cosine to the score-weighted mean of the top chunks'
    vectors: pseudo-relevance feedback that needs no query embedding."""
    if not lexical.size or lexical.max() <= 0:
        return lexical
    top = order(lexical, ROCCHIO_TOP)
    centre = (lexical[top, None] * kb.matrix[top]).sum(axis=0)
    centre /= max(float(np.linalg.norm(centre)), 1e-9)
    out: np.ndarray = lexical + np.float32(ROCCHIO_WEIGHT) * np.where(
        lexical > 0, cosines(kb.matrix, centre.astype(np.float32)), 0
    )
    return out


FollowUp = Callable[[str, Sequence[Mapping[str, str]]], Query]


def chain_rate(
    kb: Knowledge,
    qs: QuestionSet,
    embedder: HashingEmbedder,
    follow_up: FollowUp | None = None,
    *,
    on_page: bool = False,
    previous_page_prior: float = 0.0,
    answer_weight: float = 0.0,
    carry: float = 0.0,
    vector_of: VectorOf | None = None,
) -> float:
    """Share of chains whose expected page is among the cited sources of turns 2 and 3.

    Each turn runs what S4 Retrieve runs (follow-up query, hybrid rank, grounding within
    the default budget, sources), with the earlier turns as history. By default the
    visitor is on no page, so the current page cannot carry the topic; `on_page` puts the
    visitor on the chain's page (a visitor asking about what they are reading).
    Two alternatives measured and not chosen: `previous_page_prior` adds that much to
    the chunks of the page the previous turn cited first; `answer_weight` folds the terms
    of the previous answer (the offline responder's reply to that turn) into the query
    at that weight; `carry` adds that much of the previous turn's scores (shifted and
    divided to 0..1) to this turn's. `vector_of` embeds the query as S4 does with the
    local model (each turn apart) instead of its one text.
    """
    budget = Settings().grounding_token_budget
    kept = 0
    for chain in qs.chains:
        history: list[dict[str, str]] = []
        held, cited, answer = True, None, ""
        previous: np.ndarray | None = None
        for turn, message in enumerate(chain["turns"]):
            page = chain["page"] if on_page else None
            query = (
                follow_up(message, history)
                if follow_up
                else follow_up_query(message, history, history_chars=HISTORY_CHARS, page=page)
            )
            if answer_weight and answer:
                extra = {t: answer_weight for t in terms(answer) if t not in query.weights}
                query = replace(query, weights={**query.weights, **extra})
            vector = vector_of(query) if vector_of else embedder.embed([query.text])[0]
            total = scores(kb, vector, query)
            total[list(kb.page_chunks(cited))] += np.float32(previous_page_prior)
            if carry and previous is not None:
                total = total + np.float32(carry) * normalised(previous - previous.min())
            previous = total
            ranked = ranked_by(total, TOP_MATCHES)
            picked = grounding_of(kb, ranked, page, budget, TOP_MATCHES, total=total)
            grounding = [kb.chunks[i] for i in picked.chosen]
            sources = sources_of([kb.chunks[i] for i in picked.cited])
            if turn > 0:
                held = held and any(s["page"] == chain["page"] for s in sources)
            cited = sources[0]["page"] if sources else None
            answer = offline_answer(grounding, [*history, {"role": "user", "content": message}])
            history += [{"role": "user", "content": message}, {"role": "assistant", "content": ""}]
        kept += held
    return kept / len(qs.chains) if qs.chains else float("nan")


def offline_answer(grounding: Sequence[Chunk], turns: Sequence[Mapping[str, str]]) -> str:
    """What the offline responder replies to the last turn with this grounding."""
    system = system_text(
        [{"page": c.page, "heading": c.heading, "text": c.text} for c in grounding]
    )
    messages = [{"role": t["role"], "content": [{"text": t["content"]}]} for t in turns]
    return compose_reply(system, messages, Settings().max_output_tokens)


def unrelated_page_mrr(kb: Knowledge, qs: QuestionSet, embedder: HashingEmbedder) -> float:
    """MRR of the hybrid when the visitor reads another page (the next one in path order)
    than the one that answers: the current-page prior must not drown a clear match."""
    pages = sorted(kb.pages)
    ranks = []
    for q in qs.questions:
        other = pages[(pages.index(q["page"]) + 1) % len(pages)]
        query = follow_up_query(q["question"], _history(q), history_chars=HISTORY_CHARS, page=other)
        ranks.append(page_rank(kb, scores(kb, embedder.embed([query.text])[0], query), q["page"]))
    return summarise(ranks).mrr


def _history(q: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"role": "user", "content": q["previous"]}] if "previous" in q else []


def previous_turn_only(message: str, history: Sequence[Mapping[str, str]]) -> Query:
    """The follow-up query this issue replaced: previous user turn + message, equal weights."""
    users = [t["content"] for t in history if t.get("role") == "user" and t.get("content")]
    return plain_query(f"{users[-1]}\n{message}" if users else message)


def bm25s_scorer(kb: Knowledge) -> Scorer | None:
    """bm25s (k1 1.2, b 0.75, Robertson's formulas) over the same terms, if installed."""
    try:
        import bm25s
    except ImportError:
        return None
    retriever = bm25s.BM25(k1=K1, b=0.75, method="robertson")
    retriever.index([terms(chunk_document(c)) for c in kb.chunks], show_progress=False)

    def score(kb: Knowledge, vector: np.ndarray, query: Query) -> np.ndarray:
        wanted = [t for t in query.weights if t in retriever.vocab_dict]
        return np.asarray(retriever.get_scores(wanted), dtype=np.float32)

    return score


GRID_K1 = (0.6, 0.9, 1.2, 1.6, 2.0)
GRID_B = (0.3, 0.5, 0.75, 0.9)
GRID_PAGE_WEIGHT = (0.2, 0.4, 0.8)


def lexical_with(
    kb: Knowledge, query: Query, k1: float, b: float, page_weight: float
) -> np.ndarray:
    """The hybrid's lexical part with other BM25 parameters and page weight."""
    chunks = normalised(bm25_scores(kb, query, k1=k1, b=b))
    pages = normalised(page_bm25_scores(kb, query, k1=k1, b=b))[kb.page_of]
    out: np.ndarray = chunks + np.float32(page_weight) * np.where(chunks > 0, pages, 0)
    return out


def parameter_grid(
    kb: Knowledge, qs: QuestionSet, embedder: HashingEmbedder
) -> dict[tuple[float, float, float], tuple[float, float]]:
    """(k1, b, page weight) -> (degraded right-page rate, hybrid MRR), over the grid."""
    queries = [question_query(q) for q in qs.questions]
    vectors = embedder.embed([query.text for query in queries])
    cosine = [cosines(kb.matrix, vector) for vector in vectors]
    grid = {}
    for k1 in GRID_K1:
        for b in GRID_B:
            for weight in GRID_PAGE_WEIGHT:
                right, ranks = 0, []
                for q, query, cos in zip(qs.questions, queries, cosine, strict=True):
                    lexical = lexical_with(kb, query, k1, b, weight)
                    right += best_page(kb, lexical) == q["page"]
                    total = cos + np.float32(LEXICAL_WEIGHT) * lexical
                    ranks.append(page_rank(kb, total, q["page"]))
                grid[(k1, b, weight)] = (right / len(qs.questions), summarise(ranks).mrr)
    return grid


LEXICAL_WEIGHTS = (0.1, 0.2, 0.3, 0.5, 1.0)


def lexical_weight_sweep(
    kb: Knowledge, qs: QuestionSet, embedder: HashingEmbedder
) -> dict[float, float]:
    """Hybrid MRR for other weights of the lexical part beside the cosine."""
    table = {f"{w}": weighted(w) for w in LEXICAL_WEIGHTS}
    found = evaluate(kb, qs, embedder, table)
    return {w: found[f"{w}"].mrr for w in LEXICAL_WEIGHTS}
