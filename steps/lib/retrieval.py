"""Hybrid ranking, grounding selection and the degraded answer (numpy only).

score(chunk) = cosine(query, chunk) + LEXICAL_WEIGHT x lexical overlap(query, chunk)

The lexical overlap is the IDF-weighted share of the query's distinct content terms
that the chunk contains (0 = none, 1 = all), so a rare acronym or proper noun ("WAF",
"Nakamura") moves a chunk up even when the embedding blurs it. Both parts are computed
for every chunk in one vectorised pass: a matrix-vector product for the cosine (rows and
query are unit length) and a bincount over the query terms' postings for the overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .errors import KnowledgeError
from .knowledge import Chunk, Knowledge
from .tokens import terms

LEXICAL_WEIGHT = 0.15
HEADING_WEIGHT = 0.2  # degraded answers only: see degraded_answer()
# The cosine product runs in row blocks of at most this many elements. OpenBLAS hands a
# larger matrix-vector product to worker threads; on a fractional or shared CPU (a Lambda
# at 512 MB, a busy laptop) waking them costs 10-20 ms per call, against 0.4 ms for
# 2,000 x 1024 computed in blocks on the calling thread (docs/benchmarks.md).
BLOCK_ELEMENTS = 1 << 18


def query_text(message: str, history: Sequence[Mapping[str, str]]) -> str:
    """The previous USER turn + newline + the message, so follow-ups keep their topic."""
    for turn in reversed(history):
        if turn.get("role") == "user" and turn.get("content"):
            return f"{turn['content']}\n{message}"
    return message


def lexical_scores(kb: Knowledge, text: str) -> np.ndarray:
    """IDF-weighted overlap of the query's distinct terms with every chunk, in 0..1."""
    scores = np.zeros(len(kb.chunks), dtype=np.float32)
    ids = sorted({kb.vocabulary[t] for t in terms(text) if t in kb.vocabulary})
    if not ids:
        return scores
    term_ids = np.asarray(ids, dtype=np.int64)
    starts, ends = kb.postings_ptr[term_ids], kb.postings_ptr[term_ids + 1]
    lengths = ends - starts
    # Gather every (term, chunk) posting of the query terms without a Python loop per chunk.
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    chunks = kb.postings[offsets]
    weights = np.repeat(kb.idf[term_ids], lengths)
    scores += np.bincount(chunks, weights=weights, minlength=len(kb.chunks)).astype(np.float32)
    return scores / np.float32(kb.idf[term_ids].sum())


def scores(kb: Knowledge, query_vector: np.ndarray, text: str) -> np.ndarray:
    """The hybrid score of every chunk (unsorted)."""
    vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if vector.shape[0] != kb.dimensions:
        raise KnowledgeError(
            f"query vector has {vector.shape[0]} dimensions, the index has {kb.dimensions}"
        )
    return cosines(kb.matrix, vector) + np.float32(LEXICAL_WEIGHT) * lexical_scores(kb, text)


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


def rank(
    kb: Knowledge, query_vector: np.ndarray, text: str, *, limit: int | None = None
) -> list[tuple[int, float]]:
    """(chunk index, score) best first; ties keep document order. `limit` keeps the top N."""
    total = scores(kb, query_vector, text)
    if limit is not None and limit < total.shape[0]:
        top = np.argpartition(-total, limit)[:limit] if limit > 0 else np.zeros(0, np.intp)
        order = top[np.lexsort((top, -total[top]))]
    else:
        order = np.argsort(-total, kind="stable")
    return list(zip(order.tolist(), total[order].tolist(), strict=True))


def select_grounding(
    kb: Knowledge,
    ranked: Sequence[tuple[int, float]],
    page: str | None,
    budget_tokens: int,
    top_k: int = 5,
) -> list[Chunk]:
    """The current page's chunks, then the top_k matches; de-duplicated; within budget.

    Greedy in that priority order: a chunk that would overflow the budget is skipped (a
    later, shorter one may still fit), so the total never exceeds `budget_tokens`.
    """
    candidates = list(kb.page_chunks(page)) + [index for index, _ in ranked[:top_k]]
    chosen: list[Chunk] = []
    seen: set[int] = set()
    used = 0
    for index in candidates:
        if index in seen:
            continue
        seen.add(index)
        chunk = kb.chunks[index]
        if used + chunk.tokens <= budget_tokens:
            chosen.append(chunk)
            used += chunk.tokens
    return chosen


def degraded_answer(kb: Knowledge, text: str, *, page: str | None = None) -> Chunk | None:
    """The best LEXICAL match, verbatim, or None when no chunk shares a term.

    It never embeds: degraded mode runs when the budget is spent, so it must cost nothing.
    A section whose heading trail names the question's terms is what the question is
    about, so heading overlap adds HEADING_WEIGHT (a glossary that merely mentions every
    term loses to the page titled with them); remaining ties go to the visitor's current
    page, then to document order.
    """
    lexical = lexical_scores(kb, text)
    if lexical.size == 0 or float(lexical.max()) <= 0.0:
        return None
    wanted = {t: kb.idf[kb.vocabulary[t]] for t in set(terms(text)) if t in kb.vocabulary}
    total = float(sum(wanted.values()))
    current = set(kb.page_chunks(page))

    def preference(index: int) -> tuple[float, bool, int]:
        heading = set(terms(kb.chunks[index].heading))
        overlap = sum(float(w) for t, w in wanted.items() if t in heading) / total
        return (-(float(lexical[index]) + HEADING_WEIGHT * overlap), index not in current, index)

    candidates = np.flatnonzero(lexical > 0).tolist()
    return kb.chunks[min(candidates, key=preference)]
