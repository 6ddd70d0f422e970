"""Hybrid ranking, grounding selection and the degraded answer (numpy only).

score(chunk) = cosine(query, chunk)
               + LEXICAL_WEIGHT x (BM25F(chunk) / max + PAGE_WEIGHT x BM25(its page) / max)

and beside the local model (its own weights, LOCAL_*), each chunk also borrows from its
page's cosines: + LOCAL_HEAD_WEIGHT x cosine(query, the page's first chunk)
+ LOCAL_PAGE_MAX_WEIGHT x the page's best chunk cosine (page_parts).

The lexical part is Okapi BM25 over two fields (BM25F): a term in the chunk's heading
trail counts HEADING_FIELD_WEIGHT times a term in its text, in the term frequency and in
the document length alike, then the usual saturation (K1) and length normalisation (B);
each query term is scaled by its follow-up weight (followup.py). The page part is BM25
over whole pages, added only to chunks that share a term with the query, so a section
of a page that talks about the question throughout beats a lone section elsewhere that
shares a few of its words. Each part is divided by its best value for the query, so it
lies in 0..1 like the cosine: a rare acronym or proper noun ("WAF", "shrinkwrap") moves
a chunk up even when the embedding blurs it. The fusion (normalised weighted sum rather
than reciprocal rank fusion) and the weights were chosen by `make bench-retrieval` on two
question sets, one over documentation nobody on the team wrote (docs/benchmarks.md).

Everything is computed for every chunk in one vectorised pass: a matrix-vector product
for the cosine (rows and query are unit length) and bincounts over the query terms'
postings for the two BM25s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..providers.local_embedder import is_local_model
from ..runtime.errors import KnowledgeError
from ..text.tokens import terms
from . import selection
from .followup import Query, follow_up_query, plain_query
from .knowledge import Chunk, Knowledge

__all__ = ["Query", "follow_up_query", "plain_query"]

LEXICAL_WEIGHT = 0.3  # beside Titan and the hashing stand-in (chosen beside the latter)
# Beside the local MiniLM model the cosine carries more, and each chunk also borrows from
# its page's cosines (page_parts): its page's head (first chunk) and its page's best chunk.
# The three weights were chosen together by `make bench-retrieval` over a grid, as the
# largest smaller MRR gain over BM25 of both question sets (docs/benchmarks.md,
# "Retrieval with the local embedder"; the grid is tests/bench/local_model.py's GRID).
# With inputs cut at 128 word pieces the grid moved the lexical weight from 0.2 to 0.3;
# the margins between neighbouring grid points are one or two questions of either set.
LOCAL_LEXICAL_WEIGHT = 0.3
LOCAL_HEAD_WEIGHT = 0.1
LOCAL_PAGE_MAX_WEIGHT = 0.5
# Pseudo-relevance feedback in embedding space beside the local model (feedback_vector):
# the query vector moves LOCAL_FEEDBACK_WEIGHT x towards the mean of the first pass's
# LOCAL_FEEDBACK_TOP chunk vectors, and the chunks are scored again. 0: off. Measured and
# not adopted: every setting of the bench's grid lowered a target figure on one of the two
# question sets (docs/benchmarks.md, the levers table); the switch stays for the bench.
LOCAL_FEEDBACK_TOP = 5
LOCAL_FEEDBACK_WEIGHT = 0.0
PAGE_WEIGHT = 0.4  # of the page's BM25 inside the lexical part
# Added to the chunks of the page the visitor is reading: it lifts them for a vague
# follow-up without overriding a clear match elsewhere. docs/benchmarks.md ("Asked from
# where the visitor stands") measures it on four real sites, with the hashing stand-in and
# the local model, asked from an unrelated long page, the home page and the page itself:
# the largest prior of the grid whose worst gap to "no page" stays within 0.03 on every
# set (0.028 on LMDB's docs, whose longest page is about the same API; 0.03 cost 0.042
# there, 0.05 0.056 and 0.15 up to 0.22). It still lifts the page itself for a question
# asked on it (0 does not).
CURRENT_PAGE_WEIGHT = 0.02
# The same prior for a follow-up (a message after earlier user turns): "and what if I
# lose it?" asked on the passkeys page has no topic of its own, and the page the visitor
# reads is part of the conversation's context. docs/benchmarks.md ("Asked from where the
# visitor stands", npm's chains): 0.1 keeps the chains asked on their page as 0.15 did
# before this prior was split (0.80 on npm; 0.02 kept 0.60) and costs none asked from an
# unrelated long page or the home page (0.15 lost 0.2 there).
FOLLOW_UP_PAGE_WEIGHT = 0.1
K1 = 1.2
B = 0.75
# Measured (docs/benchmarks.md): a boosted heading field did not help beside the cosine
# nor for the degraded answer on either question set, so BM25F runs as plain BM25 over
# heading trail + text (weight 1); the knob stays for the benchmark.
HEADING_FIELD_WEIGHT = 1.0
# The cosine product runs in row blocks of at most this many elements. OpenBLAS hands a
# larger matrix-vector product to worker threads; on a fractional or shared CPU (a Lambda
# at 512 MB, a busy laptop) waking them costs 10-20 ms per call, against 0.4 ms for
# 2,000 x 1024 computed in blocks on the calling thread (docs/benchmarks.md).
BLOCK_ELEMENTS = 1 << 18


@dataclass(frozen=True, slots=True)
class _Gathered:
    term_ids: np.ndarray
    query_weights: np.ndarray
    lengths: np.ndarray  # postings per term
    offsets: np.ndarray  # into the postings arrays
    chunks: np.ndarray  # the chunk of each gathered posting


def as_query(query: Query | str) -> Query:
    return plain_query(query) if isinstance(query, str) else query


def _postings_of(kb: Knowledge, weights: Mapping[str, float]) -> _Gathered | None:
    """Every (query term, chunk) posting of the query's known terms, in one gather."""
    ids = ((kb.vocabulary.get(t), w) for t, w in weights.items())  # one lookup per term
    known = sorted((term_id, w) for term_id, w in ids if term_id is not None)
    if not known:
        return None
    term_ids = np.asarray([term_id for term_id, _ in known], dtype=np.int64)
    starts, ends = kb.postings_ptr[term_ids], kb.postings_ptr[term_ids + 1]
    lengths = ends - starts
    # Without a Python loop per chunk: the offsets of all the terms' postings, concatenated.
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    return _Gathered(
        term_ids=term_ids,
        query_weights=np.asarray([w for _, w in known], dtype=np.float32),
        lengths=lengths,
        offsets=offsets,
        chunks=kb.postings[offsets],
    )


def bm25_scores(
    kb: Knowledge,
    query: Query | str,
    *,
    k1: float = K1,
    b: float = B,
    heading_weight: float | None = None,
) -> np.ndarray:
    """BM25F of every chunk (0 where no query term occurs), each term scaled by its weight.

    heading_weight (default HEADING_FIELD_WEIGHT) = 1 is plain Okapi BM25 over heading
    trail + text as one document.
    """
    scores = np.zeros(len(kb.chunks), dtype=np.float32)
    found = _postings_of(kb, as_query(query).weights)
    if found is None:
        return scores
    weight = np.float32(HEADING_FIELD_WEIGHT if heading_weight is None else heading_weight)
    tf = kb.text_tf[found.offsets] + weight * kb.heading_tf[found.offsets]
    length = kb.text_length + weight * kb.heading_length
    norm = np.float32(k1) * (1 - b + b * length / max(float(length.mean()), 1e-9))
    term_weight = np.repeat(kb.idf[found.term_ids] * found.query_weights, found.lengths)
    contribution = term_weight * tf * np.float32(k1 + 1) / (tf + norm[found.chunks])
    scores += np.bincount(found.chunks, weights=contribution, minlength=len(kb.chunks)).astype(
        np.float32
    )
    return scores


def page_bm25_scores(
    kb: Knowledge, query: Query | str, *, k1: float = K1, b: float = B
) -> np.ndarray:
    """BM25 of every PAGE (all its chunks as one document), one value per page number.

    A page that answers a question usually uses its words in several sections; a chunk
    borrowing its page's evidence outranks a lone section elsewhere that happens to share
    a few words (the npm docs repeat the same configuration notes on many pages).
    """
    n_pages = int(kb.page_of.max()) + 1 if kb.page_of.size else 0
    found = _postings_of(kb, as_query(query).weights)
    if found is None or n_pages == 0:
        return np.zeros(n_pages, dtype=np.float32)
    n_terms = found.term_ids.shape[0]
    owner = np.repeat(np.arange(n_terms), found.lengths)
    tf = kb.text_tf[found.offsets] + kb.heading_tf[found.offsets]
    page_tf = np.bincount(
        owner * n_pages + kb.page_of[found.chunks], weights=tf, minlength=n_terms * n_pages
    ).reshape(n_terms, n_pages)
    df = np.count_nonzero(page_tf, axis=1)
    idf = np.log1p((n_pages - df + 0.5) / (df + 0.5))
    length = np.bincount(kb.page_of, weights=kb.text_length + kb.heading_length)
    norm = k1 * (1 - b + b * length / max(float(length.mean()), 1e-9))
    per_term = page_tf * (k1 + 1) / (page_tf + norm)
    total: np.ndarray = ((idf * found.query_weights)[:, None] * per_term).sum(axis=0)
    return total.astype(np.float32)


def normalised(raw: np.ndarray) -> np.ndarray:
    """raw divided by its maximum (0..1, 1 for the best); all zeros stay zeros."""
    best = float(raw.max()) if raw.size else 0.0
    out: np.ndarray = raw / np.float32(best) if best > 0 else raw
    return out


def lexical_scores(kb: Knowledge, query: Query | str) -> np.ndarray:
    """The hybrid's lexical part: chunk BM25F/max + PAGE_WEIGHT x its page's BM25/max,
    in 0..1 + PAGE_WEIGHT (0 for a chunk that shares no term with the query)."""
    query = as_query(query)
    chunks = normalised(bm25_scores(kb, query))
    pages = normalised(page_bm25_scores(kb, query))[kb.page_of]
    # Only a chunk that shares a term borrows its page's evidence: a section that says
    # nothing of the question is no answer to it, whatever the rest of its page says.
    total: np.ndarray = chunks + np.float32(PAGE_WEIGHT) * np.where(chunks > 0, pages, 0)
    return total


def scores(kb: Knowledge, query_vector: np.ndarray, query: Query | str) -> np.ndarray:
    """The hybrid score of every chunk (unsorted)."""
    vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if vector.shape[0] != kb.dimensions:
        raise KnowledgeError(
            f"query vector has {vector.shape[0]} dimensions, the index has {kb.dimensions}"
        )
    query = as_query(query)
    cosine = cosines(kb.matrix, vector)
    if is_local_model(kb.embedder):
        lexical = np.float32(LOCAL_LEXICAL_WEIGHT) * lexical_scores(kb, query)
        total = local_scores(kb, cosine, lexical)
        if LOCAL_FEEDBACK_WEIGHT and LOCAL_FEEDBACK_TOP:
            moved = feedback_vector(kb, vector, total, LOCAL_FEEDBACK_TOP, LOCAL_FEEDBACK_WEIGHT)
            total = local_scores(kb, cosines(kb.matrix, moved), lexical)
    else:
        total = cosine + np.float32(LEXICAL_WEIGHT) * lexical_scores(kb, query)
    current = list(kb.page_chunks(query.page))
    if current:
        prior = FOLLOW_UP_PAGE_WEIGHT if query.earlier else CURRENT_PAGE_WEIGHT
        total[current] += np.float32(prior)
    return total


def local_scores(kb: Knowledge, cosine: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """Beside the local model: cosine + the weighted lexical part + the page parts."""
    total: np.ndarray = cosine + lexical
    total += page_parts(kb, cosine, LOCAL_HEAD_WEIGHT, LOCAL_PAGE_MAX_WEIGHT)
    return total


def feedback_vector(
    kb: Knowledge, vector: np.ndarray, first: np.ndarray, top: int, weight: float
) -> np.ndarray:
    """unit(query vector + weight x mean of the `top` best chunks' vectors by `first`):
    pseudo-relevance feedback (Rocchio) in embedding space, with no embedding call. The
    chunks the first pass trusts most pull the query towards their own wording, so a
    question phrased unlike the docs can reach the sections those chunks sit beside."""
    best = order(first, top)
    moved = vector + np.float32(weight) * kb.matrix[best].mean(axis=0)
    unit: np.ndarray = (moved / max(float(np.linalg.norm(moved)), 1e-12)).astype(np.float32)
    return unit


def page_parts(kb: Knowledge, cosine: np.ndarray, head: float, best: float) -> np.ndarray:
    """What each chunk borrows from its page's cosines: `head` x the cosine of the page's
    first chunk (its title and description or opening paragraph: what the page is about)
    + `best` x the page's best chunk cosine (max aggregation over its chunks).

    A section deep in a page ("Configuration > dry-run") says little of its topic by
    itself; the page's head names it. Computed from the cosines already there: no
    embedding, no matrix product.
    """
    out = np.zeros(cosine.shape[0], dtype=np.float32)
    if not cosine.size:
        return out
    if head:
        out += np.float32(head) * cosine[kb.page_head][kb.page_of]
    if best:
        page_best = np.full(kb.page_head.shape[0], -np.inf, dtype=np.float32)
        np.maximum.at(page_best, kb.page_of, cosine)
        out += np.float32(best) * page_best[kb.page_of]
    return out


def cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """matrix @ vector (rows and vector unit length), in single-threaded row blocks."""
    rows = max(1, BLOCK_ELEMENTS // max(matrix.shape[1], 1))
    if matrix.shape[0] <= rows:
        product: np.ndarray = matrix @ vector
        return product
    out = np.empty(matrix.shape[0], dtype=np.float32)
    for start in range(0, matrix.shape[0], rows):
        np.dot(matrix[start : start + rows], vector, out=out[start : start + rows])
    return out


def order(total: np.ndarray, limit: int | None = None) -> np.ndarray:
    """Chunk indexes by descending score; ties keep document order. `limit` keeps the top N."""
    if limit is not None and limit < total.shape[0]:
        top = np.argpartition(-total, limit)[:limit] if limit > 0 else np.zeros(0, np.intp)
        return top[np.lexsort((top, -total[top]))]
    return np.argsort(-total, kind="stable")


def rank(
    kb: Knowledge, query_vector: np.ndarray, query: Query | str, *, limit: int | None = None
) -> list[tuple[int, float]]:
    """(chunk index, score) best first; ties keep document order. `limit` keeps the top N."""
    return ranked_by(scores(kb, query_vector, query), limit)


def ranked_by(total: np.ndarray, limit: int | None = None) -> list[tuple[int, float]]:
    """(chunk index, score) of `total` best first; `limit` keeps the top N."""
    best = order(total, limit)
    return list(zip(best.tolist(), total[best].tolist(), strict=True))


def grounding(
    kb: Knowledge,
    ranked: Sequence[tuple[int, float]],
    page: str | None,
    budget_tokens: int,
    top_k: int = 5,
    *,
    total: np.ndarray | None = None,
    about_page: bool = False,
) -> selection.Selection:
    """selection.py's policy: the top_k matches first, then the current page's chunks
    ranked by `total` (their scores for the question) within a bounded share of the
    budget; the page itself first when the message is about it. Never over budget."""
    relevance = None if total is None else (lambda index: float(total[index]))
    return selection.select(
        kb, ranked, page, budget_tokens, top_k=top_k, relevance=relevance, about_page=about_page
    )


@dataclass(frozen=True, slots=True)
class Grounded:
    chunks: list[Chunk]  # the grounding, in reference order
    cited: list[Chunk]  # what the answer cites, best first
    ranked: list[tuple[int, float]]  # the top matches, (chunk index, score)


def ground(
    kb: Knowledge, query_vector: np.ndarray, query: Query, budget_tokens: int, top_k: int = 5
) -> Grounded:
    """What S4 does after the embedding: rank, then select within the budget from the page
    the query carries (a message about that page grounds on the page itself)."""
    total = scores(kb, query_vector, query)
    ranked = ranked_by(total, top_k)
    about = selection.asks_about_this_page(query.message or query.text)
    picked = grounding(kb, ranked, query.page, budget_tokens, top_k, total=total, about_page=about)
    return Grounded(
        [kb.chunks[i] for i in picked.chosen], [kb.chunks[i] for i in picked.cited], ranked
    )


ALSO_PAGES = 2  # other pages a degraded answer links ("also see"), ranked next
# Whether "also see" first follows the quoted section's own links (degraded_choice).
FOLLOW_LINKS = True


@dataclass(frozen=True, slots=True)
class Degraded:
    chunk: Chunk  # the section quoted verbatim
    also: tuple[str, ...]  # up to ALSO_PAGES other pages, best first


def degraded_answer(
    kb: Knowledge,
    query: Query | str,
    *,
    page: str | None = None,
    query_vector: np.ndarray | None = None,
) -> Chunk | None:
    """The section a degraded answer quotes (`degraded_choice`'s chunk), or None."""
    found = degraded_choice(kb, query, page=page, query_vector=query_vector)
    return None if found is None else found.chunk


def degraded_choice(
    kb: Knowledge,
    query: Query | str,
    *,
    page: str | None = None,
    query_vector: np.ndarray | None = None,
) -> Degraded | None:
    """The best match for a degraded answer and the next pages to link, or None when the
    message has no content term or no chunk shares a term with the query.

    It never pays for an embedding: degraded mode runs when the budget is spent. Without
    ``query_vector`` it ranks by the hybrid's lexical part (chunk + page BM25): the page
    part makes the page that discusses the question beat a glossary that merely mentions
    its terms. With the local model's ``query_vector`` (computed on this CPU, at no model
    cost) it ranks by the same hybrid score as S4, cosine included. Exact ties go to the
    visitor's current page, then to document order. A message about the current page
    ("summarise this page") quotes the page's first section. The "also see" pages are
    first the pages the quoted section links to in its own text where the link or its
    target shares a term with the query (`linked_pages`; an index built before links were
    recorded has none), then the next pages by their best chunk that share a term with the
    query: a visitor whose answer is on the second page still gets there in one click.
    Following the links lifted LMDB's "page or a link" from 0.61 / 0.72 to 0.94 / 0.94
    (hashing stand-in / local model) and changed no other set's figure; the shared-term
    rule changed no link and stays as a guard; no page-level aggregate was better on every
    set (docs/benchmarks.md, "Why the degraded answer misses").
    """
    query = as_query(query)
    current = set(kb.page_chunks(page))
    if current and selection.asks_about_this_page(query.message or query.text):
        return Degraded(kb.chunks[min(current)], ())  # "summarise this page": its opening
    if query.own_terms == 0:  # only stop words or punctuation: nothing to look for
        return None
    lexical = lexical_scores(kb, query)
    if lexical.size == 0 or float(lexical.max()) <= 0.0:
        return None
    total = lexical if query_vector is None else scores(kb, query_vector, query)
    best = np.flatnonzero(total == total.max()).tolist()
    quoted = min(best, key=lambda index: (index not in current, index))
    chunk = kb.chunks[quoted]
    also = linked_pages(kb, quoted, query, lexical, total)[:ALSO_PAGES] if FOLLOW_LINKS else []
    for index in order(np.where(lexical > 0, total, -np.inf)).tolist():
        if lexical[index] <= 0 or len(also) == ALSO_PAGES:
            break
        found = kb.chunks[index].page
        if found != chunk.page and found not in also:
            also.append(found)
    return Degraded(chunk, tuple(also))


def linked_pages(
    kb: Knowledge, index: int, query: Query, lexical: np.ndarray, total: np.ndarray
) -> list[str]:
    """The other pages chunk `index` links to in its own text (Knowledge.links_of) where
    the link's text or its target section shares a term with the query, best target
    first: on a reference site the quoted function's text names the flag the visitor
    asked about and links to the flag's own section (Doxygen's `<a class="el">`)."""
    wanted = set(query.weights)
    own = kb.chunks[index].page
    best: dict[str, float] = {}
    for target, text in kb.links_of(index):
        chunks = kb.page_chunks(target)  # the target's page (page_chunks drops "#anchor")
        if not chunks or (page := kb.chunks[chunks[0]].page) == own:
            continue
        hits = [i for i in chunks if kb.chunks[i].id.partition("~")[0] == target]
        # A section merged into its neighbour for being short has no chunk of its own:
        # its title stays in that chunk's text, which names what the link names.
        hits = hits or [i for i in chunks if text in kb.chunks[i].text]
        if not hits or (wanted.isdisjoint(terms(text)) and not any(lexical[i] > 0 for i in hits)):
            continue
        best[page] = max(best.get(page, -np.inf), *(float(total[i]) for i in hits))
    return sorted(best, key=lambda p: -best[p])


def page_title(kb: Knowledge, page: str) -> str:
    """The first part of the heading trail of the page's first chunk: its title."""
    chunks = kb.page_chunks(page)
    return kb.chunks[chunks[0]].heading.split(" > ")[0] if chunks else page
