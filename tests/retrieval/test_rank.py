from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

from steps.lib.grounding.knowledge import Knowledge, chunk_document
from steps.lib.grounding.retrieval import (
    K1,
    LEXICAL_WEIGHT,
    PAGE_WEIGHT,
    B,
    follow_up_query,
    lexical_scores,
    rank,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.runtime.errors import KnowledgeError
from steps.lib.text.tokens import terms

QUERIES = [
    "How do I stop one IP hammering the /chat route with WAF?",
    "DMARC p=reject rollout",
    "what is STRIDE",
    "zzz qqq nothing matches this",
    "",
    "Mira Halvorsen OSCP CISSP Bergen",
]


def okapi(docs: list[Counter[str]], query: set[str]) -> list[float]:
    """Textbook BM25 of each document, written out term by term."""
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs) / n
    out = []
    for doc in docs:
        score = 0.0
        for t in query:
            df = sum(t in d for d in docs)
            if doc[t]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = K1 * (1 - B + B * sum(doc.values()) / avgdl)
                score += idf * doc[t] * (K1 + 1) / (doc[t] + norm)
        out.append(score)
    return out


def brute_force(kb: Knowledge, vector: np.ndarray, text: str) -> list[tuple[int, float]]:
    """The article's shape: map every chunk to a score in plain Python, then sort; the
    lexical part is chunk BM25 + its page's BM25 (the page = all its chunks' terms)."""
    docs = [Counter(terms(chunk_document(c))) for c in kb.chunks]
    page_docs: dict[str, Counter[str]] = {}
    for chunk, doc in zip(kb.chunks, docs, strict=True):
        page_docs.setdefault(chunk.page, Counter()).update(doc)
    query = set(terms(text))
    chunk_bm25 = okapi(docs, query)
    page_bm25 = dict(zip(page_docs, okapi(list(page_docs.values()), query), strict=True))
    best_chunk = max(chunk_bm25) or 1.0
    best_page = max(page_bm25.values()) or 1.0
    scored = []
    for i, row in enumerate(kb.matrix.tolist()):
        cosine = sum(a * b for a, b in zip(row, vector.tolist(), strict=True))
        lexical = chunk_bm25[i] / best_chunk
        if lexical > 0:
            lexical += PAGE_WEIGHT * page_bm25[kb.chunks[i].page] / best_page
        scored.append((i, cosine + LEXICAL_WEIGHT * lexical))
    return sorted(scored, key=lambda pair: -pair[1])


@pytest.mark.parametrize("text", QUERIES)
def test_rank_equals_a_brute_force_reference(
    kb: Knowledge, embedder: HashingEmbedder, text: str
) -> None:
    vector = embedder.embed([text])[0]
    fast = rank(kb, vector, text)
    slow = brute_force(kb, vector, text)
    assert len(fast) == len(slow) == len(kb.chunks)
    np.testing.assert_allclose([s for _, s in fast], [s for _, s in slow], atol=1e-5)
    # Same order wherever scores are not (numerically) tied.
    scores = dict(slow)
    for (a, sa), (b, _) in zip(fast, slow, strict=True):
        assert a == b or math.isclose(sa, scores[b], abs_tol=1e-5)


def test_the_lexical_part_changes_the_winner_for_a_proper_noun(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    text = "Evilginx"
    vector = embedder.embed([text])[0]
    cosine_only = kb.chunks[int(np.argmax(kb.matrix @ vector))]
    hybrid = kb.chunks[rank(kb, vector, text)[0][0]]
    assert "Evilginx" in hybrid.text
    assert "Evilginx" not in cosine_only.text  # the naive variant misses it
    assert lexical_scores(kb, text).max() == pytest.approx(1.0 + PAGE_WEIGHT)


def test_lexical_scores_are_bounded_and_zero_without_a_shared_term(kb: Knowledge) -> None:
    text = "WAF DDoS OWASP passkeys Bergen"
    scores = lexical_scores(kb, text)
    assert scores.min() >= 0.0 and scores.max() <= 1.0 + PAGE_WEIGHT + 1e-6 and scores.max() > 0
    wanted = set(terms(text))
    for chunk, score in zip(kb.chunks, scores.tolist(), strict=True):
        assert (score > 0) == bool(wanted & set(terms(chunk_document(chunk))))


def test_limit_returns_the_same_head_as_the_full_ranking(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    text = "certificate transparency logs"
    vector = embedder.embed([text])[0]
    assert rank(kb, vector, text, limit=5) == rank(kb, vector, text)[:5]
    assert rank(kb, vector, text, limit=0) == []


def test_a_query_vector_of_the_wrong_size_is_refused(kb: Knowledge) -> None:
    with pytest.raises(KnowledgeError, match="512 dimensions"):
        rank(kb, np.zeros(512, np.float32), "x")


def test_a_follow_up_finds_its_topic_only_through_the_earlier_turns(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    def top_page(message: str, history: list[dict[str, str]]) -> str:
        query = follow_up_query(message, history, history_chars=2000)
        return kb.chunks[rank(kb, embedder.embed([query.text])[0], query)[0][0]].page

    message = "How often should we practise getting them back?"
    history = [
        {"role": "user", "content": "How should I protect my backups from ransomware?"},
        {"role": "assistant", "content": "Keep one copy offline."},
        {"role": "user", "content": "Can AWS make them impossible to delete?"},
        {"role": "assistant", "content": "Object Lock in compliance mode."},
    ]
    assert top_page(message, history) == "/posts/ransomware-backups"
    assert top_page(message, []) != "/posts/ransomware-backups"


def test_hybrid_quality_floor_on_the_hand_written_questions(
    kb: Knowledge, embedder: HashingEmbedder, questions: list[dict[str, Any]]
) -> None:
    pages = {chunk.page for chunk in kb.chunks}
    assert len(questions) >= 40
    assert {q["page"] for q in questions} <= pages, "every expected page must be indexed"
    hits_at_5 = 0
    for q in questions:
        history = [{"role": "user", "content": q["previous"]}] if "previous" in q else []
        query = follow_up_query(q["question"], history)
        ranked = rank(kb, embedder.embed([query.text])[0], query, limit=15)
        top_pages = list(dict.fromkeys(kb.chunks[i].page for i, _ in ranked))[:5]
        hits_at_5 += q["page"] in top_pages
    assert hits_at_5 / len(questions) >= 0.9
