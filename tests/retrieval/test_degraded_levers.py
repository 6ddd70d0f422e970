"""The degraded-answer diagnosis of `make bench-retrieval` (tests/bench/degraded_misses.py),
on real Doxygen output (tests/data/real_pages/doxygen, see its SOURCE note): its page
aggregates and page ranks agree with a plain per-page computation, and its levers and
misses describe what S7 actually returned."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import chunking
from indexer.build import build
from steps.lib.grounding import retrieval
from steps.lib.grounding.followup import Query, plain_query
from steps.lib.grounding.knowledge import Knowledge, load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder
from tests.bench import degraded_misses as dm
from tests.bench import quality
from tests.retrieval.conftest import PRETTY_POLICY

DOXYGEN = Path(__file__).resolve().parents[1] / "data" / "real_pages" / "doxygen"


@pytest.fixture(scope="module")
def doxygen(tmp_path_factory: pytest.TempPathFactory) -> Knowledge:
    out = tmp_path_factory.mktemp("doxygen")
    build(DOXYGEN, out, PRETTY_POLICY, HashingEmbedder())
    return load_knowledge(out, embedder=HashingEmbedder.id)


class LexicalRun:
    """A run as the bench has it beside the hashing stand-in: S7 ranks lexically."""

    local = False

    def __init__(self, kb: Knowledge) -> None:
        self.kb = kb

    def vector(self, query: Query) -> np.ndarray:
        raise AssertionError("S7 beside the hashing stand-in embeds nothing")


def naive_page_scores(
    page_of: list[int], total: list[float], second: float, mean: bool
) -> list[float]:
    out = []
    for page in range(max(page_of) + 1):
        ranked = sorted((t for p, t in zip(page_of, total, strict=True) if p == page), reverse=True)
        runner = ranked[1] if len(ranked) > 1 else (ranked[0] if mean else 0.0)
        out.append((ranked[0] + runner) / 2 if mean else ranked[0] + second * runner)
    return out


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_page_aggregates_match_a_per_page_computation(data: st.DataObject) -> None:
    """Any split of chunks into pages (one-chunk pages included), any distinct scores."""
    pages = data.draw(st.integers(1, 6))
    page_of = list(range(pages)) + data.draw(st.lists(st.integers(0, pages - 1), max_size=20))
    page_of = data.draw(st.permutations(page_of))
    values = data.draw(
        st.lists(st.integers(-(10**6), 10**6), min_size=len(page_of), max_size=len(page_of),
                 unique=True)
    )  # fmt: skip
    total = [v / 1000 for v in values]  # distinct: a page's best is dropped by value
    kb = SimpleNamespace(page_of=np.asarray(page_of))
    for second, mean in ((0.5, False), (0.0, True)):
        got = dm.page_scores(kb, np.asarray(total), second, mean)  # type: ignore[arg-type]
        assert got.tolist() == pytest.approx(naive_page_scores(page_of, total, second, mean))


def test_page_rank_counts_pages_not_chunks(doxygen: Knowledge) -> None:
    query = plain_query("Which macros give the library version at compile time?")
    total = retrieval.lexical_scores(doxygen, query)
    pages: list[str] = []
    for index in np.argsort(-total, kind="stable").tolist():
        if doxygen.chunks[index].page not in pages:
            pages.append(doxygen.chunks[index].page)
    assert len(pages) < len(doxygen.chunks)  # several chunks per page: ranks must collapse
    for rank, page in enumerate(pages, start=1):
        assert dm.page_rank(doxygen, total, page) == rank


def test_the_shipped_lever_is_what_s7_returns(doxygen: Knowledge) -> None:
    query = plain_query("How do I begin a transaction and commit it?")
    found = retrieval.degraded_choice(doxygen, query)
    assert found is not None
    assert dm.shipped(doxygen, query, None) == [found.chunk.page, *found.also]
    loose = dm.also_without_rule(doxygen, query, None)
    assert loose[0] == found.chunk.page and len(set(loose)) == len(loose) <= 1 + dm.ALSO


def test_misses_list_only_questions_quoted_from_another_page(doxygen: Knowledge) -> None:
    questions = (
        {"question": "Which macros give the library version at compile time?",
         "page": "/group__Version"},
        {"question": "How do I begin a transaction and commit it?", "page": "/group__Version"},
    )  # fmt: skip
    qs = quality.QuestionSet(questions, ())
    run = LexicalRun(doxygen)
    quoted = [dm.shipped(doxygen, quality.question_query(q), None)[0] for q in questions]
    assert quoted[0] == "/group__Version" and quoted[1] != "/group__Version"
    [miss] = dm.misses(run, qs)
    assert miss.question == questions[1]["question"]
    assert miss.quoted.startswith(f"{quoted[1]} :: ")
    # The quoted page ranks first under the signal S7 used (the lexical part), and the
    # expected page below it.
    expected_rank, quoted_rank = miss.ranks["lexical"]
    assert quoted_rank == 1 and expected_rank > 1
    rates = dm.lever_rates(run, qs)
    assert rates[next(iter(dm.LEVERS))][0] == 0.5  # the shipped row


def test_the_indexer_lever_keeps_short_sections_apart_and_then_restores_the_rule(
    tmp_path: Path,
) -> None:
    """Doxygen gives each member a one-line section; the indexer merges those into their
    neighbour. The bench's lever indexes without the merge, and only while it runs."""
    before = dict(chunking.chunk_page.__kwdefaults__ or {})
    merged = tmp_path / "merged"
    build(DOXYGEN, merged, PRETTY_POLICY, HashingEmbedder())
    with pytest.raises(RuntimeError), dm.no_short_sections_merged():
        build(DOXYGEN, tmp_path / "unmerged", PRETTY_POLICY, HashingEmbedder())
        kept = load_knowledge(tmp_path / "unmerged", embedder=HashingEmbedder.id)
        raise RuntimeError("the rule comes back even when the bench fails")
    assert chunking.chunk_page.__kwdefaults__ == before
    usual = load_knowledge(merged, embedder=HashingEmbedder.id)
    assert len(kept.chunks) > len(usual.chunks)
    # Headings the merge folded into another section's text are headings again.
    usual_headings = {c.heading for c in usual.chunks}
    assert {c.heading for c in kept.chunks} > usual_headings
