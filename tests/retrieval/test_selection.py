"""The grounding selection: the question's matches first, the current page as bounded context."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib.grounding import retrieval, selection
from steps.lib.grounding.followup import follow_up_query
from steps.lib.grounding.knowledge import Knowledge
from steps.lib.grounding.retrieval import ground, rank, scores
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.retrieve import sources_of
from tests.bench.visitor_conditions import page_before

from .conftest import QUESTIONS

QUESTION = "What do SPF, DKIM and DMARC each do?"
ANSWER = "/posts/phishing-email-authentication"


def longest_page(kb: Knowledge, other_than: str) -> str:
    tokens = {p: sum(kb.chunks[i].tokens for i in idx) for p, idx in kb.pages.items()}
    return max((p for p in tokens if p != other_than), key=lambda p: tokens[p])


def cited(
    kb: Knowledge,
    embedder: HashingEmbedder,
    message: str,
    page: str | None,
    budget: int,
    history: list[dict[str, str]] | None = None,
) -> list[str]:
    query = follow_up_query(message, history or [], history_chars=2000, page=page)
    found = ground(kb, embedder.embed([query.text])[0], query, budget)
    return [s["page"] for s in sources_of(found.cited)]


@pytest.mark.parametrize("budget", [300, 600, 1500])
def test_a_page_longer_than_the_budget_never_replaces_the_answer(
    kb: Knowledge, embedder: HashingEmbedder, budget: int
) -> None:
    page = longest_page(kb, ANSWER)
    assert sum(kb.chunks[i].tokens for i in kb.page_chunks(page)) > 300
    assert cited(kb, embedder, QUESTION, page, budget)[0] == ANSWER
    assert cited(kb, embedder, QUESTION, None, budget)[0] == ANSWER


def test_the_policy_it_replaced_loses_the_answer_from_a_long_page(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    """The naive variant on the same index: the page first, in page order, fills the budget."""
    page = longest_page(kb, ANSWER)
    query = follow_up_query(QUESTION, [], page=page)
    ranked = rank(kb, embedder.embed([query.text])[0], query, limit=5)
    chosen, _ = page_before(kb, ranked, page, 300)
    assert {kb.chunks[i].page for i in chosen} == {page}


def test_the_page_takes_at_most_its_share_and_its_chunks_nearest_the_question_first(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    page, budget = longest_page(kb, ANSWER), 1500
    query = follow_up_query(QUESTION, [], page=page)
    total = scores(kb, embedder.embed([query.text])[0], query)
    found = ground(kb, embedder.embed([query.text])[0], query, budget)
    matches = {i for i, _ in found.ranked}
    extra = [c for c in found.chunks if c.page == page and kb.chunks.index(c) not in matches]
    assert extra and sum(c.tokens for c in extra) <= selection.PAGE_SHARE * budget
    relevance = [float(total[kb.chunks.index(c)]) for c in extra]
    assert relevance == sorted(relevance, reverse=True)  # not page order


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("Summarise this page", True),
        ("summarize this page please", True),
        ("What is this page about?", True),
        ("tl;dr this", True),
        ("Can you explain this article?", True),
        ("What are the main points of the current page?", True),
        ("What is a page rule?", False),
        ("How do I set a timeout?", False),
        ("On this page, how do I set a connect timeout for slow proxies and retries?", False),
        ("", False),
    ],
)
def test_a_message_about_this_page_is_told_from_a_question(message: str, about: bool) -> None:
    assert selection.asks_about_this_page(message) is about


def test_summarise_this_page_grounds_on_the_page_and_cites_it(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    page = longest_page(kb, ANSWER)
    query = follow_up_query("Summarise this page", [], page=page)
    found = ground(kb, embedder.embed([query.text])[0], query, 1500)
    assert [s["page"] for s in sources_of(found.cited)][:1] == [page]
    first = kb.chunks[kb.page_chunks(page)[0]]
    assert found.chunks[0] == first  # the page from its start, in page order


class _Chunk:
    def __init__(self, tokens: int) -> None:
        self.tokens = tokens


class _Index:
    """A made-up index: chunk i has tokens[i]; pages name chunk ranges."""

    def __init__(self, tokens: list[int], page: list[int]) -> None:
        self.chunks = [_Chunk(t) for t in tokens]
        self._page = tuple(page)

    def page_chunks(self, page: str | None) -> tuple[int, ...]:
        return self._page if page else ()


@settings(max_examples=300, deadline=None)
@given(
    tokens=st.lists(st.integers(1, 900), min_size=1, max_size=40),
    data=st.data(),
    budget=st.integers(0, 3000),
    about=st.booleans(),
)
def test_any_selection_stays_in_budget_and_keeps_every_match_that_fits(
    tokens: list[int], data: st.DataObject, budget: int, about: bool
) -> None:
    n = len(tokens)
    page = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    ranked = [(i, 1.0 - i / n) for i in data.draw(st.permutations(range(n)))]
    index = _Index(tokens, page)
    picked = selection.select(index, ranked, "/p", budget, top_k=5, about_page=about)
    used = [tokens[i] for i in picked.chosen]
    assert sum(used) <= budget and len(set(picked.chosen)) == len(picked.chosen)
    if about or not page:
        return
    matches = [i for i, _ in ranked[:5]]
    # The matches are chosen greedily first: a match left out did not fit beside earlier ones.
    taken = 0
    for i in matches:
        if taken + tokens[i] <= budget:
            assert i in picked.chosen
            taken += tokens[i]
    page_only = [i for i in picked.chosen if i not in matches]
    assert sum(tokens[i] for i in page_only) <= selection.PAGE_SHARE * budget
    assert set(page_only) <= set(page)
    assert list(picked.cited) == [i for i in picked.chosen if i in matches] or not taken


def _chains_kept(kb: Knowledge, embedder: HashingEmbedder, on_page: bool) -> int:
    chains = json.loads(QUESTIONS.read_text(encoding="utf-8"))["chains"]
    kept = 0
    for chain in chains:
        history: list[dict[str, str]] = []
        held = True
        for turn, message in enumerate(chain["turns"]):
            page = chain["page"] if on_page else None
            held = held and (
                turn == 0 or chain["page"] in cited(kb, embedder, message, page, 1500, history)
            )
            history += [{"role": "user", "content": message}, {"role": "assistant", "content": ""}]
        kept += held
    return kept


def test_a_vague_follow_up_asked_on_its_page_keeps_the_page(
    kb: Knowledge, embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follow-up prior: every sample chain asked on its page keeps it; with the first
    question's smaller prior for follow-ups too, one chain loses its page."""
    assert _chains_kept(kb, embedder, on_page=True) == 10
    assert _chains_kept(kb, embedder, on_page=False) == 9
    monkeypatch.setattr(retrieval, "FOLLOW_UP_PAGE_WEIGHT", retrieval.CURRENT_PAGE_WEIGHT)
    assert _chains_kept(kb, embedder, on_page=True) == 9
