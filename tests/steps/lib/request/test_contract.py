"""contract.validate_request mirrors openapi.json's ChatRequest and explains each refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib.request.contract import validate_request
from steps.lib.runtime.errors import BadRequest
from steps.lib.runtime.settings import Settings

S = Settings()
OPENAPI = Path(__file__).resolve().parents[4] / "steps" / "lib" / "request" / "openapi.json"


def ok(body):
    return validate_request(body, S)


def refused(body) -> str:
    with pytest.raises(BadRequest) as info:
        validate_request(body, S)
    return str(info.value)


def test_a_minimal_request_is_normalised():
    assert ok({"message": "hi"}) == {"message": "hi", "history": [], "page": None}


def test_a_full_request_round_trips():
    body = {
        "message": "and then?\nline two\ttab",
        "history": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "sig": "abc"},
        ],
        "page": "/posts/waf-rules_2.html",
    }
    assert ok(body) == body


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "request body must be a JSON object"),
        ([], "request body must be a JSON object"),
        ("hello", "request body must be a JSON object"),
        ({}, "message is required"),
        ({"message": True}, "message must be a string, not a boolean"),
        ({"message": 5}, "message must be a string, not a number"),
        ({"message": ["hi"]}, "message must be a string, not an array"),
        ({"message": ""}, "message must not be empty"),
        ({"message": "x" * 2001}, "message is too long (2001 characters; at most 2000)"),
        ({"message": "hi", "extra": 1}, "request body has unknown field(s): 'extra'"),
        ({"message": "hi", "system": "x"}, "request body has unknown field(s): 'system'"),
        ({"message": "a\x00b"}, "message contains a control character at position 1"),
        ({"message": "a\rb"}, "message contains a control character at position 1"),
        ({"message": "a\ud800"}, "message contains a control character at position 1"),
        ({"message": "hi", "history": None}, "history must be an array, not null"),
        ({"message": "hi", "history": {}}, "history must be an array, not an object"),
        ({"message": "hi", "history": [1]}, "history[0] must be a JSON object"),
        (
            {
                "message": "hi",
                "history": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}],
            },
            "history[1].role must be 'user' or 'assistant'",
        ),
        ({"message": "hi", "history": [{"role": "user"}]}, "history[0].content is required"),
        (
            {"message": "hi", "history": [{"role": "user", "content": "a", "name": "x"}]},
            "history[0] has unknown field(s): 'name'",
        ),
        (
            {"message": "hi", "history": [{"role": "assistant", "content": "a", "sig": 3}]},
            "history[0].sig must be a string, not a number",
        ),
        (
            {"message": "hi", "history": [{"role": "user", "content": "a"}] * 7},
            "history has 7 turns; at most 6",
        ),
        ({"message": "hi", "page": "posts"}, "page must be a site path"),
        ({"message": "hi", "page": "/a b"}, "page must be a site path"),
        ({"message": "hi", "page": "/a\n"}, "page must be a site path"),
        ({"message": "hi", "page": "/" + "a" * 256}, "page is too long"),
        ({"message": "hi", "page": None}, "page must be a string, not null"),
    ],
)
def test_bad_requests_are_refused_with_a_message_saying_what_is_wrong(body, message):
    assert refused(body).startswith(message)


def test_deep_nesting_is_refused_as_an_unknown_field_or_wrong_type():
    deep: object = "x"
    for _ in range(500):
        deep = [deep]
    assert refused({"message": deep}).startswith("message must be a string")
    assert refused({"message": "hi", "page": {"a": {"b": {}}}}).startswith("page must be a string")


def test_a_one_megabyte_message_is_refused():
    assert "too long" in refused({"message": "x" * 1_048_576})


def test_limits_mirror_the_openapi_document():
    schema = json.loads(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]
    request, turn = schema["ChatRequest"], schema["Turn"]
    assert set(request["properties"]) == {"message", "history", "page"}
    assert request["additionalProperties"] is False and turn["additionalProperties"] is False
    assert request["properties"]["message"]["maxLength"] == S.message_max_chars
    assert request["properties"]["history"]["maxItems"] == S.history_max_turns
    assert turn["properties"]["content"]["maxLength"] == S.history_turn_max_chars
    assert turn["properties"]["role"]["enum"] == ["user", "assistant"]
    assert request["properties"]["page"]["pattern"] == "^/[A-Za-z0-9/._~-]*$"


@pytest.mark.parametrize("char", ["\U0001f600", "\u6f22"])  # an emoji, a CJK character
def test_a_message_too_dense_for_the_prompt_is_refused_up_front(char):
    # 2000 characters pass the schema, but weigh more tokens than any prompt can carry: a
    # 400 here, instead of a quota count, a reservation and a 503 from S5.
    with pytest.raises(BadRequest, match="too long for the assistant"):
        validate_request({"message": "a" + char * 1999}, S)  # a letter: not refused for that


def test_every_message_the_contract_admits_fits_the_prompt_its_reserve_pays_for():
    from steps.lib.money import metering, pricing
    from steps.lib.text import prompt

    for message in ("x" * 2000, "word " * 400, "a" + "\U0001f600" * 999, "\u6f22" * 1200):
        request = validate_request({"message": message}, S)
        reserve = pricing.reserve_for(
            S, message, [], bare_system=prompt.system_text([]), metering="bytes"
        )
        allowance = pricing.input_allowance(S, reserve.micros, guarded_text=message)
        candidates = prompt.candidates(S, request["message"], [], [], ["k"])
        built = metering.fit(candidates, allowance, None).prompt
        assert built.messages[-1]["content"][0]["text"] == message


@pytest.mark.parametrize("message", ["   ", "?!?!", "\U0001f600\U0001f44d", "\n\t...", "--- ***"])
def test_a_message_without_a_letter_or_digit_is_refused(message):
    assert refused({"message": message}) == "message must contain at least one letter or digit"


@pytest.mark.parametrize("message", ["ok", "日本", "42", "?x", "Ж!", "٣", "\U0001f600 a"])
def test_a_letter_or_digit_of_any_script_is_enough(message):
    assert ok({"message": message})["message"] == message


def test_each_history_turn_needs_a_letter_or_digit_too():
    body = {"message": "ok", "history": [{"role": "user", "content": "q"},
                                         {"role": "assistant", "content": "!!"}]}  # fmt: skip
    assert refused(body) == "history[1].content must contain at least one letter or digit"


# Text of spaces, punctuation and symbols only (Z*, P*, S*: no letter, no digit, no control).
WORDLESS = st.text(
    st.characters(whitelist_categories=("Zs", "Po", "Ps", "Pe", "Pd", "Sm", "Sc", "So", "Sk")),
    min_size=1,
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(WORDLESS, st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nd", "Nl", "No")))
def test_one_letter_or_digit_is_what_separates_refused_from_accepted(text, word):
    with pytest.raises(BadRequest, match="at least one letter or digit"):
        validate_request({"message": text}, S)
    assert ok({"message": text + word})["message"] == text + word
