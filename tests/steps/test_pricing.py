"""The reserve is a true upper bound of the actual cost, in integer micro-USD."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib import pricing
from steps.lib.settings import Settings

DEFAULT = Settings()
GUARDED = Settings(guardrail_id="gr-123", guardrail_version="1")


def test_default_reserve_is_the_sum_of_its_worst_cases():
    # 6000 input tokens at the cache-write price, 512 output tokens, the embedding bound.
    expected = 6000 * Decimal("1.25") + 512 * Decimal("5.00") + (4001 * 4 + 8) * Decimal("0.02")
    assert pricing.reserve_micros(DEFAULT) == 10381 == int(expected) + 1


def test_guardrail_units_are_reserved_only_when_a_guardrail_is_configured():
    assert pricing.guardrail_unit_bound(DEFAULT) == 0
    # input: ceil(2000/1000)=2, output: ceil(512*16/1000)=9, times two policies
    assert pricing.guardrail_unit_bound(GUARDED) == (2 + 9) * 2
    assert pricing.reserve_micros(GUARDED) == pricing.reserve_micros(DEFAULT) + 22 * 150


def test_actual_cost_prices_each_usage_counter():
    usage = {
        "inputTokens": 1000,
        "outputTokens": 100,
        "cacheReadInputTokens": 2000,
        "cacheWriteInputTokens": 400,
    }
    # 1000*1 + 100*5 + 2000*0.1 + 400*1.25 + 10*0.02 + 4 units * 150
    assert pricing.actual_micros(DEFAULT, usage, 10, 4) == 1000 + 500 + 200 + 500 + 1 + 600


def test_rounding_is_up_never_down():
    assert pricing.actual_micros(DEFAULT, {"inputTokens": 0}, 1) == 1  # $0.00000002 -> 1 micro
    assert pricing.actual_micros(DEFAULT, {}, 0) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_malformed_usage_is_refused(bad):
    with pytest.raises(ValueError):
        pricing.actual_micros(DEFAULT, {"inputTokens": bad}, 0)


def _usage(draw, s: Settings):
    total_in = draw(st.integers(0, s.max_input_tokens))
    cache_write = draw(st.integers(0, total_in))
    cache_read = draw(st.integers(0, total_in - cache_write))
    return {
        "inputTokens": total_in - cache_write - cache_read,
        "cacheWriteInputTokens": cache_write,
        "cacheReadInputTokens": cache_read,
        "outputTokens": draw(st.integers(0, s.max_output_tokens)),
    }


@st.composite
def within_bounds(draw):
    s = draw(st.sampled_from([DEFAULT, GUARDED, GUARDED.replace(price_cache_write_per_mtok="0.5")]))
    return (
        s,
        _usage(draw, s),
        draw(st.integers(0, pricing.embedding_token_bound(s))),
        draw(st.integers(0, pricing.guardrail_unit_bound(s))),
    )


@settings(max_examples=300, deadline=None)
@given(within_bounds())
def test_actual_never_exceeds_the_reserve_for_any_usage_within_the_bounds(case):
    s, usage, embedding, units = case
    assert pricing.actual_micros(s, usage, embedding, units) <= pricing.reserve_micros(s)


def test_the_worst_corner_is_exactly_covered():
    s = GUARDED
    usage = {
        "inputTokens": 0,
        "cacheWriteInputTokens": s.max_input_tokens,
        "outputTokens": s.max_output_tokens,
    }
    worst = pricing.actual_micros(
        s, usage, pricing.embedding_token_bound(s), pricing.guardrail_unit_bound(s)
    )
    assert worst == pricing.reserve_micros(s)


def test_the_embedding_bound_covers_any_query_text():
    from steps.lib import tokens

    nasty = "\U0001f600" * (pricing.query_max_chars(DEFAULT))
    assert tokens.count_tokens(nasty) <= pricing.embedding_token_bound(DEFAULT)
    assert len(nasty.encode("utf-8")) <= pricing.embedding_token_bound(DEFAULT)
