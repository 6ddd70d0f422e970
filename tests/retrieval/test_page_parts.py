"""What a chunk borrows from its page beside the local model (retrieval.page_parts), and a
follow-up's vector from its turns embedded apart (local_embedder.conversation_vector).

The sample site's chunks with vectors made by hand: each test sets the cosines it needs,
so the figures are exact and no model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from steps.lib.grounding import retrieval
from steps.lib.grounding.followup import follow_up_query, plain_query
from steps.lib.grounding.knowledge import Knowledge
from steps.lib.providers.local_embedder import MODEL_ID, conversation_vector

NO_TERM = plain_query("zzz qqq")  # no lexical part: the cosines alone decide


def with_cosines(kb: Knowledge, cosine: dict[int, float]) -> tuple[Knowledge, np.ndarray]:
    """kb relabelled as the local model's, each chunk's row set so that its cosine with
    the returned query vector is `cosine[chunk]` (0 for the others)."""
    n = len(kb.chunks)
    matrix = np.zeros((n, n + 1), dtype=np.float32)
    for index in range(n):
        c = cosine.get(index, 0.0)
        matrix[index, 0], matrix[index, index + 1] = c, np.sqrt(1 - c * c)
    query = np.zeros(n + 1, dtype=np.float32)
    query[0] = 1
    return replace(kb, matrix=matrix, embedder=MODEL_ID, dimensions=n + 1), query


def two_pages(kb: Knowledge) -> tuple[tuple[int, ...], tuple[int, ...]]:
    pages = [chunks for chunks in (kb.pages[p] for p in kb.pages) if len(chunks) >= 2]
    return pages[0], pages[1]


def test_page_parts_match_a_brute_force_reference(kb: Knowledge) -> None:
    rng = np.random.default_rng(7)
    cosine = rng.uniform(-0.2, 0.9, len(kb.chunks)).astype(np.float32)
    by_page: dict[str, list[int]] = {}
    for index, chunk in enumerate(kb.chunks):
        by_page.setdefault(chunk.page, []).append(index)
    expected = [
        0.1 * cosine[by_page[chunk.page][0]] + 0.5 * max(cosine[i] for i in by_page[chunk.page])
        for chunk in kb.chunks
    ]
    assert np.allclose(retrieval.page_parts(kb, cosine, 0.1, 0.5), expected)
    assert not retrieval.page_parts(kb, cosine, 0.0, 0.0).any()


def test_a_section_of_the_page_whose_head_names_the_topic_beats_a_stray_section(
    kb: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page A's head and section both match (0.58); page B's head is off topic (0.1) and
    one section of it matches a little better (0.6), as a configuration note repeated on
    many npm pages does. The page parts rank A's section first; the cosine alone (the
    naive variant, page parts off) ranks B's."""
    (a_head, a_section, *_), (b_head, b_section, *_) = two_pages(kb)
    local, query = with_cosines(kb, {a_head: 0.58, a_section: 0.58, b_head: 0.1, b_section: 0.6})
    best = retrieval.rank(local, query, NO_TERM, limit=1)[0][0]
    assert local.chunks[best].page == kb.chunks[a_head].page
    monkeypatch.setattr(retrieval, "LOCAL_HEAD_WEIGHT", 0.0)
    monkeypatch.setattr(retrieval, "LOCAL_PAGE_MAX_WEIGHT", 0.0)
    naive = retrieval.rank(local, query, NO_TERM, limit=1)[0][0]
    assert local.chunks[naive].page == kb.chunks[b_section].page


def test_only_the_local_models_index_borrows_from_its_page(kb: Knowledge) -> None:
    (a_head, a_section, *_), _ = two_pages(kb)
    local, query = with_cosines(kb, {a_head: 0.5, a_section: 0.2})
    other = replace(local, embedder="hashing-v2")
    plain = retrieval.cosines(other.matrix, query)
    assert np.allclose(retrieval.scores(other, query, NO_TERM), plain)
    lifted = retrieval.scores(local, query, NO_TERM)
    assert lifted[a_section] == pytest.approx(0.2 + 0.1 * 0.5 + 0.5 * 0.5, abs=1e-6)


class FakeModel:
    """Fixed unit vectors per text; records the batches it was asked for."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def test_a_follow_up_is_its_message_plus_a_share_of_the_earlier_turns_in_one_batch() -> None:
    e = np.eye(3, dtype=np.float32)
    model = FakeModel({"undo it?": e[0], "try my library": e[1], "without publishing": e[2]})
    query = follow_up_query(
        "undo it?",
        [
            {"role": "user", "content": "try my library"},
            {"role": "assistant", "content": "Use npm link."},
            {"role": "user", "content": "without publishing"},
        ],
        history_chars=200,
    )
    assert query.message == "undo it?"
    assert query.earlier == ("try my library", "without publishing")
    vector = conversation_vector(model, query.message, query.earlier, 0.3)  # type: ignore[arg-type]
    expected = e[0] + 0.3 * (e[1] + e[2]) / 2
    assert np.allclose(vector, expected / np.linalg.norm(expected))
    assert model.batches == [["undo it?", "try my library", "without publishing"]]


def test_a_first_message_is_embedded_alone() -> None:
    v = np.asarray([0.6, 0.8, 0.0], dtype=np.float32)
    model = FakeModel({"hello": v})
    assert np.allclose(conversation_vector(model, "hello", ()), v)  # type: ignore[arg-type]


def test_feedback_moves_the_query_towards_the_first_pass_best_chunks(kb: Knowledge) -> None:
    """retrieval.feedback_vector: unit(v + weight x mean of the top chunks' rows)."""
    (a_head, a_section, *_), (b_head, *_) = two_pages(kb)
    local, query = with_cosines(kb, {a_head: 0.9, a_section: 0.8, b_head: 0.1})
    first = retrieval.cosines(local.matrix, query)
    moved = retrieval.feedback_vector(local, query, first, 2, 0.5)
    expected = query + 0.5 * (local.matrix[a_head] + local.matrix[a_section]) / 2
    assert np.allclose(moved, expected / np.linalg.norm(expected))
    assert np.linalg.norm(moved) == pytest.approx(1.0, abs=1e-6)
    # Moved towards A's rows, the query now leans on them more than the first pass did.
    again = retrieval.cosines(local.matrix, moved)
    assert again[a_section] - again[b_head] > first[a_section] - first[b_head]


def test_feedback_is_off_by_default_and_rescores_when_on(
    kb: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured and not adopted (docs/benchmarks.md): with weight 0 the scores are the
    one-pass hybrid; with a weight they are the hybrid of the moved vector."""
    (a_head, a_section, *_), (b_head, *_) = two_pages(kb)
    local, query = with_cosines(kb, {a_head: 0.9, a_section: 0.3, b_head: 0.5})
    assert retrieval.LOCAL_FEEDBACK_WEIGHT == 0.0
    one_pass = retrieval.scores(local, query, NO_TERM)
    monkeypatch.setattr(retrieval, "LOCAL_FEEDBACK_WEIGHT", 1.0)
    monkeypatch.setattr(retrieval, "LOCAL_FEEDBACK_TOP", 1)
    two_pass = retrieval.scores(local, query, NO_TERM)
    moved = retrieval.feedback_vector(local, query, one_pass, 1, 1.0)
    lexical = np.zeros(len(kb.chunks), dtype=np.float32)
    assert np.allclose(
        two_pass, retrieval.local_scores(local, retrieval.cosines(local.matrix, moved), lexical)
    )
    assert not np.allclose(two_pass, one_pass)
