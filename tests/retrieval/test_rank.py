from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

from steps.lib.errors import KnowledgeError
from steps.lib.hashing_embedder import HashingEmbedder
from steps.lib.knowledge import Knowledge, chunk_document
from steps.lib.retrieval import K1, LEXICAL_WEIGHT, B, follow_up_query, lexical_scores, rank
from steps.lib.tokens import terms

QUERIES = [
    "How do I stop one IP hammering the /chat route with WAF?",
    "DMARC p=reject rollout",
    "what is STRIDE",
    "zzz qqq nothing matches this",
    "",
    "Mira Halvorsen OSCP CISSP Bergen",
]


def brute_force(kb: Knowledge, vector: np.ndarray, text: str) -> list[tuple[int, float]]:
    """The article's shape: map every chunk to a score in plain Python, then sort; the
    lexical part is textbook BM25 written out term by term."""
    docs = [Counter(terms(chunk_document(c))) for c in kb.chunks]
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs) / n
    query = set(terms(text))
    bm25 = []
    for doc in docs:
        score = 0.0
        for t in query:
            df = sum(t in d for d in docs)
            if doc[t]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = K1 * (1 - B + B * sum(doc.values()) / avgdl)
                score += idf * doc[t] * (K1 + 1) / (doc[t] + norm)
        bm25.append(score)
    best = max(bm25) if bm25 and max(bm25) > 0 else 1.0
    scored = []
    for i, row in enumerate(kb.matrix.tolist()):
        cosine = sum(a * b for a, b in zip(row, vector.tolist(), strict=True))
        scored.append((i, cosine + LEXICAL_WEIGHT * bm25[i] / best))
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
    assert lexical_scores(kb, text).max() == pytest.approx(1.0)


def test_lexical_scores_are_normalised_between_zero_and_one(kb: Knowledge) -> None:
    scores = lexical_scores(kb, "WAF DDoS OWASP passkeys Bergen")
    assert scores.min() >= 0.0 and scores.max() <= 1.0 + 1e-6 and scores.max() > 0


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
        query = follow_up_query(message, history)
        return kb.chunks[rank(kb, embedder.embed([query.text])[0], query)[0][0]].page

    message = "how often should we test restoring them?"
    history = [{"role": "user", "content": "How should I protect backups from ransomware?"}]
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
