"""The hard cap's first link, against the worst the outside world allows: for EVERY request
S1 accepts, with any signed history and any grounding, what S5 sends, billed by a tokenizer
we cannot see, costs at most what S3 reserved.

The tokenizer is unknown, so three models of it bill each prompt: one token per UTF-8 byte,
NFKC first and then one per byte, and the project's own estimate. A fourth case is exact
metering: CountTokens answers anything at all, and the provider bills what it answered
(assumption A1). The naive variant (metering by the estimate) is shown failing on the same
harness.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from steps.lib.money import byte_bound, metering, pricing
from steps.lib.request import signing
from steps.lib.request.contract import validate_request
from steps.lib.runtime.errors import BadRequest, NotSent
from steps.lib.runtime.settings import Settings
from steps.lib.text import prompt, tokens

KEY = "signing-key-0123456789abcdef"
PLAIN = Settings()
GUARDED = Settings(guardrail_id="gr-1", guardrail_version="1")

NFKC_EXPANDERS = "\ufdfa\ufdfb\u3392\u2474\ufb03\u33ff\u2163\u00bd\u1e9b\u0390"
ZERO_WIDTH_AND_BIDI = "\u200b\u200c\u200d\u2060\ufeff\u202e\u202d\u2066\u2069\u061c"
HOSTILE_ALPHABETS = [
    "a1b2c3d4e5f6g7h8i9j0",  # letters split from digits: one token a character
    "0123456789",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",  # base64
    "0123456789abcdef",  # hex
    "\U0001f600\U0001f680\U0001f9d1\u200d\U0001f4bb\U0001f1fa\U0001f1f8",  # emoji, ZWJ
    "e\u0301\u0308\u0323\u0338\u20dd\u0489",  # combining marks pile up on one base
    NFKC_EXPANDERS,
    "\u05d0\u05d1\u0627\u0644\u0639" + ZERO_WIDTH_AND_BIDI,  # RTL with controls
    "\u6f22\u5b57\u304b\u306a\ud55c",  # CJK
    " \t\n",  # whitespace: free for the estimate, not for the model
]


def hostile(max_size: int) -> st.SearchStrategy[str]:
    runs = [st.text(alphabet=a, min_size=1, max_size=max_size) for a in HOSTILE_ALPHABETS]
    repeated = st.sampled_from(HOSTILE_ALPHABETS).map(lambda a: (a * max_size)[:max_size])
    return st.one_of(*runs, repeated, st.text(min_size=1, max_size=max_size))


@st.composite
def conversations(draw: st.DrawFn) -> tuple[str, list[dict[str, str]], list[dict[str, str]]]:
    """A message, a history of genuinely signed exchanges, and S4-shaped grounding."""
    message = draw(hostile(PLAIN.message_max_chars))
    history: list[dict[str, str]] = []
    for _ in range(draw(st.integers(0, PLAIN.history_max_turns // 2))):
        question = draw(hostile(PLAIN.history_turn_max_chars))
        reply = draw(hostile(PLAIN.history_turn_max_chars))
        sig = signing.sign(signing.exchange(question, reply), KEY)
        history += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": reply, "sig": sig},
        ]
    grounding = [
        {"page": "/p", "heading": f"h{i}", "text": draw(hostile(1500))}
        for i in range(draw(st.integers(0, 6)))
    ]
    return message, history, grounding


def billed_input(tokenizer: str, system: str, messages: list[dict]) -> int:
    """What a provider with this tokenizer bills for exactly what was sent (framing as in
    byte_bound's constants, assumption A3)."""
    texts = [t for m in messages for t in byte_bound.message_texts(m)]
    measure = {
        "bytes": lambda t: len(t.encode("utf-8")),
        "nfkc": lambda t: len(unicodedata.normalize("NFKC", t).encode("utf-8")),
        "estimate": tokens.count_tokens,
    }[tokenizer]
    framing = byte_bound.REQUEST_OVERHEAD_TOKENS + byte_bound.MESSAGE_OVERHEAD_TOKENS * len(
        messages
    )
    return framing + measure(system) + sum(measure(t) for t in texts)


def accepted(s: Settings, message: str, history: list[dict[str, str]]) -> dict:
    try:
        return dict(validate_request({"message": message, "history": history}, s))
    except BadRequest:
        assume(False)
        raise  # unreachable: assume(False) aborts the example


def s3_then_s5(s, request, grounding, meter_name, counter):
    """S3's reserve, then what S5 sends under it (None: S5 refused, nothing sent)."""
    reserve = pricing.reserve_for(
        s, request["message"], request["history"],
        bare_system=prompt.system_text([]), metering=meter_name,
    )  # fmt: skip
    allowance = pricing.input_allowance(s, reserve.micros, guarded_text=request["message"])
    candidates = prompt.candidates(s, request["message"], request["history"], grounding, [KEY])
    try:
        return reserve, metering.fit(candidates, allowance, counter)
    except NotSent:
        return reserve, None


def billed_micros(s: Settings, input_tokens: int, message: str) -> int:
    """The provider at the bound for everything else: maxTokens out, the longest query
    Titan may be sent, every guardrail unit the message and a maximal reply can cost."""
    usage = {"inputTokens": input_tokens, "outputTokens": s.max_output_tokens}
    units = pricing.guardrail_unit_bound(s, message)
    return pricing.actual_micros(s, usage, pricing.EMBEDDING_TOKEN_BOUND, units)


PROOF = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROOF
@given(st.sampled_from([PLAIN, GUARDED]), st.sampled_from(["bytes", "count_tokens"]),
       conversations())  # fmt: skip
def test_any_accepted_request_billed_by_any_tokenizer_costs_at_most_its_reserve(
    s, meter_name, conversation
):
    message, history, grounding = conversation
    request = accepted(s, message, history)
    reserve, fitted = s3_then_s5(s, request, grounding, meter_name, counter=None)
    assert fitted is not None, "S1 accepted it, so the system prompt and message always fit"
    sent = fitted.prompt
    for tokenizer in ("bytes", "nfkc", "estimate"):
        billed = billed_input(tokenizer, sent.system, sent.messages)
        assert billed <= fitted.input_tokens
        assert billed_micros(s, billed, message) <= reserve.micros


@PROOF
@given(st.sampled_from([PLAIN, GUARDED]), conversations(), st.data())
def test_with_exact_metering_any_count_the_provider_answers_is_within_the_reserve(
    s, conversation, data
):
    message, history, grounding = conversation
    request = accepted(s, message, history)

    def count_tokens(system: str, messages: list[dict]) -> int:
        # CountTokens answers anything from nothing to three times the byte bound.
        bound = byte_bound.prompt_bound(system, messages)
        return data.draw(st.integers(0, 3 * bound))

    reserve, fitted = s3_then_s5(s, request, grounding, "count_tokens", count_tokens)
    assert fitted is not None
    # A1: the provider bills exactly what CountTokens (or, failing that, the bound) said.
    assert billed_micros(s, fitted.input_tokens, message) <= reserve.micros


@PROOF
@given(conversations())
def test_a_failing_count_falls_back_to_the_bound_never_to_an_unbounded_call(conversation):
    message, history, grounding = conversation
    request = accepted(PLAIN, message, history)

    def unavailable(system: str, messages: list[dict]) -> int:
        raise metering.CountUnavailable("throttled")

    reserve, fitted = s3_then_s5(PLAIN, request, grounding, "count_tokens", unavailable)
    assert fitted is not None and fitted.metering == "bytes"
    sent = fitted.prompt
    assert byte_bound.prompt_bound(sent.system, sent.messages) <= fitted.input_tokens
    assert billed_micros(PLAIN, fitted.input_tokens, message) <= reserve.micros


def test_the_naive_meter_an_estimate_of_the_tokenizer_lets_the_bill_pass_the_reserve():
    # The first version metered by tokens.count_tokens: letters and digits at one token
    # per six characters. A tokenizer that splits letters from digits bills one a byte.
    text = "a1b2c3d4e5" * 200
    sig = signing.sign(signing.exchange(text, text), KEY)
    history = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": text, "sig": sig},
    ]
    request = accepted(PLAIN, text, history)

    def estimate(system: str, messages: list[dict]) -> int:
        return billed_input("estimate", system, messages)

    reserve, fitted = s3_then_s5(PLAIN, request, [], "count_tokens", estimate)
    sent = fitted.prompt
    billed = billed_input("bytes", sent.system, sent.messages)
    assert billed_micros(PLAIN, billed, text) > reserve.micros
    # The same request metered by the bound instead stays within it.
    _, bounded = s3_then_s5(PLAIN, request, [], "count_tokens", None)
    billed = billed_input("bytes", bounded.prompt.system, bounded.prompt.messages)
    assert billed_micros(PLAIN, billed, text) <= reserve.micros


@pytest.mark.parametrize("char", ["\ufdfa", "\u3392", "\U0001f600"])
def test_nfkc_expansion_counts_at_its_larger_form(char):
    expanded = unicodedata.normalize("NFKC", char * 10).encode("utf-8")
    assert byte_bound.text_bound(char * 10) == max(len(expanded), len((char * 10).encode()))
    assert byte_bound.text_bound("\ufdfa") == 33  # 3 bytes, 33 after NFKC


@given(st.text(max_size=400), st.integers(0, 600))
def test_a_cut_text_always_fits_its_limit_and_is_a_prefix(text, limit):
    cut = byte_bound.cut_to_bound(text, limit)
    assert text.startswith(cut) and byte_bound.text_bound(cut) <= limit


def test_counting_stops_at_its_time_budget_and_the_bound_decides():
    # A count that answers slowly: after COUNT_BUDGET_SECONDS no new count is started, so
    # the prompt is trimmed by the byte bound rather than waiting on CountTokens.
    sig = signing.sign(signing.exchange("q" * 2000, "r" * 2000), KEY)
    history = [
        {"role": "user", "content": "q" * 2000},
        {"role": "assistant", "content": "r" * 2000, "sig": sig},
    ]
    request = accepted(PLAIN, "x" * 500, history)
    now = [0.0]
    calls = []

    def slow_count(system: str, messages: list[dict]) -> int:
        calls.append(len(messages))
        now[0] += metering.COUNT_BUDGET_SECONDS  # this count used up the whole budget
        return 10**9  # and did not fit

    candidates = prompt.candidates(PLAIN, request["message"], request["history"], [], [KEY])
    fitted = metering.fit(candidates, 3000, slow_count, clock=lambda: now[0])
    assert calls == [3] and fitted.metering == "bytes" and fitted.count_calls == 1
    assert byte_bound.prompt_bound(fitted.prompt.system, fitted.prompt.messages) <= 3000
