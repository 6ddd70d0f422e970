"""The reserve is a true upper bound of the actual cost, in integer micro-USD, and S5's
reading of a reservation (the input it pays for) is the exact inverse of S3's pricing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib.money import pricing
from steps.lib.money.byte_bound import MESSAGE_OVERHEAD_TOKENS, REQUEST_OVERHEAD_TOKENS
from steps.lib.providers import catalogue
from steps.lib.runtime.settings import Settings
from steps.lib.text import prompt, tokens

DEFAULT = Settings()
GUARDED = Settings(guardrail_id="gr-123", guardrail_version="1")
QUESTION = "How does the WAF rate rule count requests?"


def test_a_reserve_is_its_allowance_and_every_other_term_at_its_bound():
    reserve = pricing.reserve_for(
        DEFAULT, QUESTION, [], bare_system=prompt.system_text([]), metering="count_tokens"
    )
    # Exact metering: the fixed text by the estimate, the message by its bytes, the
    # grounding budget in tokens; never less than the fixed text and message by bytes.
    allowance = (
        REQUEST_OVERHEAD_TOKENS
        + tokens.count_tokens(prompt.system_text([]))
        + MESSAGE_OVERHEAD_TOKENS
        + len(QUESTION)  # ASCII: one byte a character
        + DEFAULT.grounding_token_budget
    )
    assert reserve.input_tokens == allowance
    expected = allowance * Decimal("1.00") + 512 * Decimal("5.00") + 8008 * Decimal("0.02")
    assert reserve.micros == int(expected) + (expected % 1 > 0)


def test_the_system_prompt_and_message_always_fit_whatever_the_estimate_says():
    dense = "a1b2c3d4e5" * 200  # the estimate says 334 tokens; it may bill 2,000
    reserve = pricing.reserve_for(
        DEFAULT.replace(grounding_token_budget=1), dense, [],
        bare_system=prompt.system_text([]), metering="count_tokens",
    )  # fmt: skip
    assert reserve.input_tokens >= prompt.bare_system_tokens() + len(dense)


def test_without_exact_metering_the_reserve_holds_grounding_and_history_by_their_bytes():
    history = [{"role": "user", "content": "\u6f22" * 100}, {"role": "assistant", "content": "ok"}]
    kwargs = {"bare_system": prompt.system_text([])}
    exact = pricing.reserve_for(DEFAULT, QUESTION, history, metering="count_tokens", **kwargs)
    by_bytes = pricing.reserve_for(DEFAULT, QUESTION, history, metering="bytes", **kwargs)
    assert by_bytes.input_tokens > exact.input_tokens
    assert by_bytes.input_tokens <= DEFAULT.max_input_tokens


def test_guardrail_units_are_reserved_only_when_a_guardrail_is_configured():
    assert pricing.guardrail_unit_bound(DEFAULT, QUESTION) == 0
    # only the message is assessed: ceil(42/1000) = 1 unit, times two policies
    assert pricing.guardrail_unit_bound(GUARDED, QUESTION) == 1 * 2
    # the message counts by its bytes: 2,000 emoji are 8,000 bytes, 8 units
    assert pricing.guardrail_unit_bound(GUARDED, "\U0001f600" * 2000) == 8 * 2
    assert (
        pricing.cost_bound(GUARDED, 100, guarded_text=QUESTION)
        == pricing.cost_bound(DEFAULT, 100, guarded_text=QUESTION) + 2 * 150
    )


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


# A model the catalogue does not know, priced explicitly (cheap input, short output).
UNCATALOGUED = DEFAULT.replace(
    model_id="example.cheap-model-v1", price_input_per_mtok="0.0001",
    price_output_per_mtok="0.0004", price_cache_write_per_mtok="0.000125",
    price_cache_read_per_mtok="0.00001", model_metering="bytes", max_output_tokens=64,
)  # fmt: skip
SETTINGS = st.sampled_from(
    [
        DEFAULT,
        GUARDED,
        GUARDED.replace(price_input_per_mtok="3.00", price_output_per_mtok="15.00"),
        UNCATALOGUED,
        *(GUARDED.replace(model_id=model_id) for model_id in sorted(catalogue.CATALOGUE)),
    ]
)
MESSAGES = st.text(min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(SETTINGS, MESSAGES, st.data())
def test_actual_never_exceeds_the_cost_bound_for_any_usage_within_the_bounds(s, message, data):
    allowance = data.draw(st.integers(0, s.max_input_tokens))
    usage = {
        "inputTokens": data.draw(st.integers(0, allowance)),
        "outputTokens": data.draw(st.integers(0, s.max_output_tokens)),
    }
    embedding = data.draw(st.integers(0, pricing.EMBEDDING_TOKEN_BOUND))
    units = data.draw(st.integers(0, pricing.guardrail_unit_bound(s, message)))
    actual = pricing.actual_micros(s, usage, embedding, units)
    assert actual <= pricing.cost_bound(s, allowance, guarded_text=message)


@settings(max_examples=300, deadline=None)
@given(SETTINGS, MESSAGES, st.integers(0, 200_000))
def test_s5_reads_back_exactly_the_input_a_reservation_pays_for(s, message, reserved):
    allowance = pricing.input_allowance(s, reserved, guarded_text=message)
    if allowance < 0:  # cannot even pay for the output and the rest: nothing may be sent
        assert pricing.cost_bound(s, 0, guarded_text=message) > reserved
        return
    assert pricing.cost_bound(s, allowance, guarded_text=message) <= reserved
    if allowance < s.max_input_tokens:  # and not one token less than it could
        assert pricing.cost_bound(s, allowance + 1, guarded_text=message) > reserved


@settings(max_examples=100, deadline=None)
@given(SETTINGS, MESSAGES, st.integers(0, 6000))
def test_s3_and_s5_agree_on_the_allowance_when_they_hold_the_same_settings(s, message, tokens):
    tokens = min(tokens, s.max_input_tokens)
    reserved = pricing.cost_bound(s, tokens, guarded_text=message)
    assert pricing.input_allowance(s, reserved, guarded_text=message) >= tokens


def test_the_worst_corner_is_exactly_covered():
    s, allowance = GUARDED, 4321
    usage = {"inputTokens": allowance, "outputTokens": s.max_output_tokens}
    worst = pricing.actual_micros(
        s, usage, pricing.EMBEDDING_TOKEN_BOUND, pricing.guardrail_unit_bound(s, QUESTION)
    )
    assert worst == pricing.cost_bound(s, allowance, guarded_text=QUESTION)


def test_a_release_costs_at_most_the_embedding_and_less_than_any_reserve():
    assert pricing.release_micros(DEFAULT) == 161  # 8,008 tokens x $0.02 / 1M, rounded up
    assert pricing.release_micros(DEFAULT) < pricing.cost_bound(DEFAULT, 0, guarded_text="x")


def test_the_largest_reserve_bounds_every_request_reserve():
    longest = pricing.largest_reserve_micros(GUARDED)
    for message in ("x", "\U0001f600" * 1000, "y" * 2000):
        for metering in ("bytes", "count_tokens"):
            reserve = pricing.reserve_for(
                GUARDED, message, [{"content": "z" * 2000}] * 6,
                bare_system=prompt.system_text([]), metering=metering,
            )  # fmt: skip
            assert reserve.micros <= longest
