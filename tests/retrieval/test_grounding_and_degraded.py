from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from steps.lib.grounding.followup import plain_query
from steps.lib.grounding.knowledge import Chunk, Knowledge, build_knowledge, lexical_stats
from steps.lib.grounding.retrieval import degraded_answer, grounding, rank
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.runtime.settings import Settings
from tests.bench.quality import overlap_scores

from .conftest import SAMPLE_SITE

PAGE = "/posts/waf-rate-limiting"


def select_grounding(
    kb: Knowledge,
    ranked: list[tuple[int, float]],
    page: str | None,
    budget_tokens: int,
    top_k: int = 5,
) -> list[Chunk]:
    return [kb.chunks[i] for i in grounding(kb, ranked, page, budget_tokens, top_k).chosen]


@pytest.fixture
def ranked(kb: Knowledge, embedder: HashingEmbedder) -> list[tuple[int, float]]:
    text = "What do SPF, DKIM and DMARC each do?"
    return rank(kb, embedder.embed([text])[0], text)


def test_grounding_leads_with_the_top_matches_then_the_current_page(
    kb: Knowledge, ranked: list[tuple[int, float]]
) -> None:
    chosen = select_grounding(kb, ranked, PAGE, budget_tokens=100_000, top_k=5)
    matches = [kb.chunks[i] for i, _ in ranked[:5]]
    assert chosen[:5] == matches  # what an answer cites leads the reference
    assert chosen[0].page == "/posts/phishing-email-authentication"
    # Then the page, within its share of the budget (selection.PAGE_SHARE of 100,000).
    assert chosen[5:] == [kb.chunks[i] for i in kb.page_chunks(PAGE) if kb.chunks[i] not in matches]


def test_the_matches_have_first_call_on_the_budget(
    kb: Knowledge, ranked: list[tuple[int, float]]
) -> None:
    page_tokens = sum(kb.chunks[i].tokens for i in kb.page_chunks(PAGE))
    chosen = select_grounding(kb, ranked, PAGE, budget_tokens=page_tokens, top_k=5)
    assert chosen[0] == kb.chunks[ranked[0][0]]
    assert {c.page for c in chosen} != {PAGE}


def test_grounding_never_repeats_a_chunk(kb: Knowledge, embedder: HashingEmbedder) -> None:
    text = "WAF rate-based rule evaluation window"
    ranked = rank(kb, embedder.embed([text])[0], text)
    chosen = select_grounding(kb, ranked, PAGE, budget_tokens=100_000, top_k=5)
    assert len({c.id for c in chosen}) == len(chosen)
    assert len(chosen) < len(kb.page_chunks(PAGE)) + 5  # the overlap was dropped, not repeated


@pytest.mark.parametrize("budget", [0, 50, 120, 300, 700, 1500])
def test_grounding_stays_within_the_token_budget(
    kb: Knowledge, ranked: list[tuple[int, float]], budget: int
) -> None:
    chosen = select_grounding(kb, ranked, PAGE, budget_tokens=budget)
    assert sum(c.tokens for c in chosen) <= budget
    # Greedy and not lazy: nothing skipped would still have fit in what is left.
    left = budget - sum(c.tokens for c in chosen)
    matches = [i for i, _ in ranked[:5]]
    skipped = [kb.chunks[i] for i in matches if kb.chunks[i] not in chosen]
    assert all(c.tokens > left for c in skipped)


def test_the_settings_budget_is_what_a_caller_gets(
    kb: Knowledge, ranked: list[tuple[int, float]]
) -> None:
    budget = Settings().grounding_token_budget
    chosen = select_grounding(kb, ranked, PAGE, budget)
    assert 0 < sum(c.tokens for c in chosen) <= budget


@pytest.mark.parametrize("page", [None, "", "/no/such/page"])
def test_an_unknown_or_missing_page_grounds_on_matches_only(
    kb: Knowledge, ranked: list[tuple[int, float]], page: str | None
) -> None:
    chosen = select_grounding(kb, ranked, page, budget_tokens=100_000, top_k=3)
    assert chosen == [kb.chunks[i] for i, _ in ranked[:3]]


def test_page_paths_are_normalised_like_the_indexer_does(kb: Knowledge) -> None:
    assert kb.page_chunks(PAGE + "/?utm=x#top") == kb.page_chunks(PAGE) != ()
    assert kb.page_chunks("/guides/index.html") == kb.page_chunks("/guides") != ()


def test_degraded_answer_is_verbatim_and_never_embeds(
    kb: Knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: HashingEmbedder, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("degraded mode must not embed")

    monkeypatch.setattr(HashingEmbedder, "embed", refuse)
    chunk = degraded_answer(kb, "Should I turn off WPS and UPnP on my router?")
    assert chunk is not None
    assert chunk.page == "/guides/home-router"
    assert chunk.heading == "Hardening your home router > Turn off what you do not use"
    source = (SAMPLE_SITE / "guides" / "home-router.html").read_text(encoding="utf-8")
    assert "Disable WPS, the push-button pairing feature" in chunk.text
    assert "push-button pairing feature, which has a long history" in source


def test_degraded_answer_is_none_when_nothing_shares_a_word(kb: Knowledge) -> None:
    assert degraded_answer(kb, "zzz qqq") is None
    assert degraded_answer(kb, "the and of") is None


def test_degraded_answer_prefers_the_section_titled_with_the_question(kb: Knowledge) -> None:
    # The glossary defines the term, so the replaced scorer (IDF-weighted overlap) picks
    # it; the page about the subject is what the visitor asked about.
    question = "What is a WAF?"
    naive = overlap_scores(kb, plain_query(question))
    assert kb.chunks[int(naive.argmax())].page == "/glossary"
    chunk = degraded_answer(kb, question)
    assert chunk is not None and chunk.page == "/posts/waf-rate-limiting"


def test_degraded_answer_breaks_ties_towards_the_current_page() -> None:
    chunks = [
        Chunk(f"/{name}#x", f"/{name}", "Notes", "browser settings", 3) for name in ("a", "b", "c")
    ]
    kb = build_knowledge(chunks, np.eye(3, 4, dtype=np.float32), "test", lexical_stats(chunks))
    assert degraded_answer(kb, "browser") == chunks[0]  # no page: document order
    for chunk in chunks:
        assert degraded_answer(kb, "browser", page=chunk.page) == chunk
