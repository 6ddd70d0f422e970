"""BM25F against values computed by hand on a three-chunk corpus, and the follow-up query."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from steps.lib.grounding.followup import EARLIER_TURN_WEIGHT, Query, follow_up_query, plain_query
from steps.lib.grounding.knowledge import Chunk, Knowledge, build_knowledge, lexical_stats
from steps.lib.grounding.retrieval import (
    CURRENT_PAGE_WEIGHT,
    PAGE_WEIGHT,
    bm25_scores,
    degraded_answer,
    lexical_scores,
    page_bm25_scores,
    rank,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder


@pytest.fixture(scope="module")
def tiny() -> Knowledge:
    chunks = [
        Chunk("/a#alpha", "/a", "Alpha", "cat cat dog", 4),
        Chunk("/b#beta", "/b", "Beta", "dog bird", 3),
        Chunk("/c#gamma", "/c", "Gamma", "fish", 2),
    ]
    matrix = np.eye(3, 4, dtype=np.float32)
    return build_knowledge(chunks, matrix, "test", lexical_stats(chunks))


# One field (heading weight 1): documents "alpha cat cat dog" (4 terms), "beta dog bird"
# (3), "gamma fish" (2); avgdl = 3, N = 3, k1 = 1.2, b = 0.75.
#   idf(cat) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3) = 0.980829
#   idf(dog) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6) = 0.470004
#   norm(a) = 1.2 x (0.25 + 0.75 x 4/3) = 1.5;  norm(b) = 1.2 x (0.25 + 0.75 x 3/3) = 1.2
#   cat in a: 0.980829 x 2 x 2.2 / (2 + 1.5) = 1.233043
#   dog in a: 0.470004 x 1 x 2.2 / (1 + 1.5) = 0.413603;  dog in b: 0.470004 x 2.2 / 2.2
HAND = {
    "cat": [1.233043, 0.0, 0.0],
    "dog": [0.413603, 0.470004, 0.0],
    "cat dog": [1.233043 + 0.413603, 0.470004, 0.0],
    "whale": [0.0, 0.0, 0.0],
}


@pytest.mark.parametrize("text", HAND)
def test_bm25_matches_hand_computed_values(tiny: Knowledge, text: str) -> None:
    scores = bm25_scores(tiny, text, heading_weight=1.0)
    np.testing.assert_allclose(scores, HAND[text], atol=1e-5)


def test_bm25_saturates_where_a_raw_count_would_not(tiny: Knowledge) -> None:
    # "cat" twice scores 1.233, not twice the single-occurrence score: k1 saturation.
    single = 0.980829 * 2.2 / (1 + 1.5)
    assert bm25_scores(tiny, "cat", heading_weight=1.0)[0] < 2 * single


def test_the_heading_field_weight_counts_heading_terms_that_many_times(tiny: Knowledge) -> None:
    # Heading x3: lengths a = 3 + 3 = 6, b = 2 + 3 = 5, c = 1 + 3 = 4, avgdl = 5;
    # norm(a) = 1.2 x (0.25 + 0.75 x 6/5) = 1.38; tf(alpha in a) = 3.
    expected = 0.980829 * 3 * 2.2 / (3 + 1.38)
    assert bm25_scores(tiny, "alpha", heading_weight=3.0)[0] == pytest.approx(expected, abs=1e-5)


def test_query_weights_scale_each_terms_contribution(tiny: Knowledge) -> None:
    query = follow_up_query("dog", [{"role": "user", "content": "cat"}])
    expected = np.array(HAND["dog"]) + EARLIER_TURN_WEIGHT * np.array(HAND["cat"])
    np.testing.assert_allclose(bm25_scores(tiny, query, heading_weight=1.0), expected, atol=1e-5)


def test_page_bm25_treats_each_page_as_one_document(tiny: Knowledge) -> None:
    # One chunk per page here, so page BM25 = chunk BM25 (pages numbered in chunk order).
    np.testing.assert_allclose(page_bm25_scores(tiny, "dog"), HAND["dog"], atol=1e-5)


def test_lexical_scores_divide_by_the_best_and_add_the_page_part(tiny: Knowledge) -> None:
    chunk = np.array([0.413603 / 0.470004, 1.0, 0.0])
    expected = chunk * (1 + PAGE_WEIGHT)  # page = chunk here, gated where the chunk is 0
    np.testing.assert_allclose(lexical_scores(tiny, "dog"), expected, atol=1e-5)
    assert not lexical_scores(tiny, "whale").any()


def test_a_page_lends_its_evidence_to_its_sections_that_share_a_term() -> None:
    chunks = [
        Chunk("/p#1", "/p", "Pets", "cat care", 2),
        Chunk("/p#2", "/p", "Pets", "cat food cat toys", 4),
        Chunk("/p#3", "/p", "Pets", "fish", 1),
        Chunk("/q#1", "/q", "Pets", "cat care", 2),
        Chunk("/q#2", "/q", "Weather", "rain wind sun snow fog hail frost storm", 8),
    ]
    kb = build_knowledge(chunks, np.eye(5, 4, dtype=np.float32), "t", lexical_stats(chunks))
    lexical = lexical_scores(kb, "cat care")
    assert bm25_scores(kb, "cat care")[0] == bm25_scores(kb, "cat care")[3]
    assert lexical[0] > lexical[3]  # same section; /p talks about cats throughout
    assert lexical[2] == 0  # on the good page, but says nothing of the question


def test_follow_up_weights_decay_with_each_earlier_turn() -> None:
    history = [
        {"role": "user", "content": "passkeys for a small team"},
        {"role": "assistant", "content": "Start with the admin accounts."},
        {"role": "user", "content": "how do we roll them out"},
        {"role": "assistant", "content": "Issue two hardware keys per person."},
    ]
    query = follow_up_query("what if someone loses theirs?", history)
    assert query.weights["lose"] == 1.0 and query.own_terms == 2  # "someone", "lose"
    assert query.weights["roll"] == EARLIER_TURN_WEIGHT
    assert query.weights["passkey"] == EARLIER_TURN_WEIGHT**2
    assert "hardware" not in query.weights  # assistant turns are not folded in
    # By default what gets embedded is the previous user turn + the message.
    assert query.text == "how do we roll them out\nwhat if someone loses theirs?"


def test_a_term_keeps_the_weight_of_its_most_recent_use() -> None:
    history = [{"role": "user", "content": "backup"}, {"role": "user", "content": "ransomware"}]
    query = follow_up_query("backup restore drills", history)
    assert query.weights["backup"] == 1.0


@given(
    message=st.text(max_size=60),
    turns=st.lists(st.text(min_size=1, max_size=80), max_size=6),
    cap=st.one_of(st.none(), st.integers(0, 200)),
)
def test_the_embedded_text_stays_within_the_priced_bound(
    message: str, turns: list[str], cap: int | None
) -> None:
    history = [{"role": "user", "content": t} for t in turns]
    text = follow_up_query(message, history, history_chars=cap).text
    one_turn = len(turns[-1]) if turns else 0
    assert len(text) <= (one_turn if cap is None else cap) + 1 + len(message)
    assert text.endswith(message)


def test_earlier_turns_are_embedded_newest_first_back_to_what_fits() -> None:
    history = [{"role": "user", "content": t} for t in ("passkeys please", "roll out", "x")]
    assert follow_up_query("and?", history, history_chars=100).text == (
        "passkeys please\nroll out\nx\nand?"
    )
    assert follow_up_query("and?", history, history_chars=10).text == "roll out\nx\nand?"
    assert follow_up_query("and?", history).text == "x\nand?"  # default: one turn's length


def test_only_the_last_few_user_turns_count() -> None:
    history = [{"role": "user", "content": f"topic{i}"} for i in range(10)]
    query = follow_up_query("next", history)
    assert "topic9" in query.weights and "topic0" not in query.weights
    assert follow_up_query("hello", []) == plain_query("hello")


@pytest.mark.parametrize("message", ["the and of", "?!...", "", "   "])
def test_a_message_with_no_content_term_finds_nothing_in_degraded_mode(
    tiny: Knowledge, message: str
) -> None:
    history = [{"role": "user", "content": "cat"}]
    assert degraded_answer(tiny, follow_up_query(message, history)) is None
    # The naive variant (the history's terms alone) would return an arbitrary section.
    assert bm25_scores(tiny, follow_up_query(message, history)).max() > 0


def test_idf_weights_are_bm25s() -> None:
    # Guard the constant the hand values above rely on.
    assert math.log(1 + 2.5 / 1.5) == pytest.approx(0.980829, abs=1e-6)


def test_the_current_page_lifts_a_vague_follow_up_into_the_matches(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    # The walk-through: on the passkeys page, the later turns drifted elsewhere.
    page = "/posts/mfa-and-passkeys"
    history = [
        {"role": "user", "content": "Which second factors actually hold up against phishing?"},
        {"role": "assistant", "content": "Hardware keys and passkeys."},
        {"role": "user", "content": "How should a small team roll them out?"},
        {"role": "assistant", "content": "Start with the accounts that can change others."},
    ]
    message = "What happens if someone loses theirs?"

    def position(query: Query) -> int:
        pages = [kb.chunks[i].page for i, _ in rank(kb, embedder.embed([query.text])[0], query)]
        return pages.index(page)

    with_page = position(follow_up_query(message, history, history_chars=2000, page=page))
    without = position(follow_up_query(message, history, history_chars=2000))
    assert with_page < without and with_page < 5


def test_the_current_page_prior_does_not_drown_a_clear_match(
    kb: Knowledge, embedder: HashingEmbedder
) -> None:
    query = follow_up_query("What does DMARC p=reject do?", [], page="/posts/mfa-and-passkeys")
    assert kb.chunks[rank(kb, embedder.embed([query.text])[0], query, limit=1)[0][0]].page == (
        "/posts/phishing-email-authentication"
    )
    assert CURRENT_PAGE_WEIGHT < 0.2  # a prior, not a filter
