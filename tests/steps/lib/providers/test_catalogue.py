"""The model catalogue decides the reserve's prices and its metering: the default model is
metered by the byte bound (it has no CountTokens on bedrock-runtime), a profile prefix
changes the prices, and a model the catalogue does not know needs cdk.json to price it."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatguard.cli import main
from infra import config
from steps.lib.money import metering, pricing
from steps.lib.money.byte_bound import prompt_bound
from steps.lib.providers import catalogue, model_ids
from steps.lib.providers.bedrock import BedrockResponder
from steps.lib.providers.interface import CountUnavailable
from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import Settings, cdk_context
from steps.lib.text import prompt

HAIKU_45 = "anthropic.claude-haiku-4-5-20251001-v1:0"
SONNET_4 = "anthropic.claude-sonnet-4-20250514-v1:0"
AWS = Settings().replace(model_backend="bedrock")
COUNT_REGION = "eu-west-1"  # offers CountTokens (user guide): the Region did not decide it
BARE = prompt.system_text([])
QUESTION = "How do I pick a WAF rate limit for a small blog?"
EXPLICIT = {
    "model_id": "example.house-model-v1",
    "price_input_per_mtok": "2",
    "price_output_per_mtok": "8",
    "price_cache_write_per_mtok": "2.5",
    "price_cache_read_per_mtok": "0.2",
    "model_metering": "bytes",
}


def _reserve(s: Settings, message: str = QUESTION, region: str = COUNT_REGION) -> Any:
    chosen = model_ids.metering_for(s, region)
    return pricing.reserve_for(s, message, [], bare_system=BARE, metering=chosen)


# -- Finding 1: the metering follows the model, not the Region alone ---------------------


def test_the_default_model_in_a_count_tokens_region_is_metered_by_bytes():
    # On main, metering_for chose "count_tokens" here: S3 reserved 1,848 input tokens and
    # S5, whose CountTokens fails for Haiku 4.5, kept 1 grounding chunk of 10.
    assert not catalogue.counts_tokens(AWS.model_id)
    assert model_ids.metering_for(AWS, COUNT_REGION) == "bytes"
    sized = _reserve(AWS)
    by_bytes = pricing.reserve_for(AWS, QUESTION, [], bare_system=BARE, metering="bytes")
    exact = pricing.reserve_for(AWS, QUESTION, [], bare_system=BARE, metering="count_tokens")
    assert sized == by_bytes
    assert sized.input_tokens > exact.input_tokens  # room for the grounding by its bytes


def test_the_default_models_reserve_keeps_its_grounding_when_counttokens_cannot_answer():
    # Finding 1 end to end in the money code: S3 sizes the reserve as metering_for says,
    # S5 meets a CountTokens that refuses Haiku 4.5 (ValidationException on AWS) and fits
    # by the byte bound. Sized for exact counts (main's choice here) it kept 1 chunk of 10.
    chunks = [
        {
            "page": f"/p{i}",
            "heading": "h",
            "text": "The rate rule counts requests per address over a window. " * 10,
        }
        for i in range(10)
    ]

    def refused(system: str, messages: list[dict[str, Any]]) -> int:
        raise CountUnavailable("CountTokens failed: ValidationException")

    def kept(metering_name: str) -> int:
        reserve = pricing.reserve_for(AWS, QUESTION, [], bare_system=BARE, metering=metering_name)
        allowance = pricing.input_allowance(AWS, reserve.micros, guarded_text=QUESTION)
        candidates = prompt.candidates(AWS, QUESTION, [], chunks, ("k" * 16,))
        return metering.fit(candidates, allowance, refused).prompt.grounding_chunks

    assert kept("count_tokens") <= 1  # the gutted answer main produced
    assert kept(model_ids.metering_for(AWS, COUNT_REGION)) >= 8


def test_a_model_the_guide_lists_counts_exactly_where_the_region_offers_it():
    sonnet = AWS.replace(model_id=f"us.{SONNET_4}")
    assert model_ids.metering_for(sonnet, COUNT_REGION) == "count_tokens"
    assert model_ids.metering_for(sonnet, "ca-central-1") == "bytes"  # no CountTokens there
    assert model_ids.metering_for(sonnet.replace(model_metering="bytes"), COUNT_REGION) == "bytes"
    assert model_ids.metering_for(sonnet.replace(model_backend="offline"), COUNT_REGION) == "bytes"


class _NeverCalled:
    meta = type("Meta", (), {"region_name": COUNT_REGION})()

    def count_tokens(self, **_: Any) -> Any:
        raise AssertionError("CountTokens was called for a model the catalogue says has none")


def test_s5_does_not_ask_counttokens_for_the_default_model_and_reports_no_failure():
    responder = BedrockResponder(AWS, _NeverCalled())
    chunks = [{"page": f"/p{i}", "heading": "h", "text": "word " * 300} for i in range(3)]
    candidates = list(prompt.candidates(AWS, QUESTION, [], chunks, ("k" * 16,)))
    barest = candidates[-1]
    allowance = prompt_bound(barest.system, barest.messages)  # only the barest fits
    fitted = metering.fit(candidates, allowance, responder.count_tokens)
    assert fitted.prompt == barest
    assert (fitted.metering, fitted.count_calls, fitted.count_failed) == ("bytes", 0, False)


def test_s5_counts_a_model_the_catalogue_lists_on_its_bare_id():
    calls: list[dict[str, Any]] = []

    class Counting(_NeverCalled):
        def count_tokens(self, **request: Any) -> Any:
            calls.append(request)
            return {"inputTokens": 42}

    sonnet = AWS.replace(model_id=f"us.{SONNET_4}")
    messages = [{"role": "user", "content": [{"text": QUESTION}]}]
    assert BedrockResponder(sonnet, Counting()).count_tokens("system", messages) == 42
    assert [c["modelId"] for c in calls] == [SONNET_4]  # CountTokens refuses profile ids


# -- Finding 2: the prices follow the model id, prefix included -------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=2000), st.sampled_from(["us", "eu", "apac", ""]))
def test_changing_only_the_profile_prefix_changes_the_reserve(message, prefix):
    regional_id = f"{prefix}.{HAIKU_45}" if prefix else HAIKU_45
    cheap, dear = AWS, AWS.replace(model_id=regional_id)  # nothing else changed
    assert dear.model_terms.input_per_mtok == Decimal("1.10")
    assert dear.model_terms.output_per_mtok == Decimal("5.50")
    low, high = _reserve(cheap, message), _reserve(dear, message)
    assert low.input_tokens == high.input_tokens
    assert high.micros > low.micros
    # What a regional call bills at its bounds fits the regional reserve, not the global one.
    usage = {"inputTokens": high.input_tokens, "outputTokens": dear.max_output_tokens}
    billed = pricing.actual_micros(dear, usage, pricing.EMBEDDING_TOKEN_BOUND)
    assert billed <= high.micros
    assert billed > low.micros


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(catalogue.CATALOGUE)), st.integers(0, 6000))
def test_every_catalogued_model_is_reserved_at_its_own_row(model_id, input_tokens):
    s = AWS.replace(model_id=model_id)
    row = catalogue.CATALOGUE[model_id]
    expected = (
        input_tokens * row.input_per_mtok
        + s.max_output_tokens * row.output_per_mtok
        + pricing.EMBEDDING_TOKEN_BOUND * s.price_embedding_per_mtok
    )
    assert pricing.cost_bound(s, input_tokens, guarded_text="hi") == math.ceil(expected)


def test_cdk_json_prices_no_model_itself():
    # The reserve's model prices come from the catalogue; cdk.json holds only overrides.
    context = cdk_context()["chatguard"]
    assert not set(catalogue.PRICE_KEYS) & set(context)
    assert Settings.from_mapping(context).model_terms == catalogue.CATALOGUE[context["model_id"]]


# -- A model the catalogue does not know -------------------------------------------------


def test_an_unknown_model_without_its_prices_is_refused_in_one_line():
    with pytest.raises(SettingsError) as refused:
        Settings().replace(model_id="us.anthropic.claude-next-v1:0")
    message = str(refused.value)
    assert "\n" not in message and "not in the model catalogue" in message
    assert all(key in message for key in (*catalogue.PRICE_KEYS, "model_metering"))


def test_an_unknown_model_with_only_some_prices_is_refused():
    partial = {k: v for k, v in EXPLICIT.items() if k != "price_cache_read_per_mtok"}
    with pytest.raises(SettingsError, match="price_cache_read_per_mtok"):
        Settings().replace(**partial)


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=2000))
def test_an_explicitly_priced_model_is_accepted_and_reserved_at_its_prices(message):
    s = AWS.replace(**EXPLICIT)
    assert s.model_terms.input_per_mtok == Decimal(2) and not s.model_terms.counts_tokens
    assert model_ids.metering_for(s, COUNT_REGION) == "bytes"
    reserve = _reserve(s, message)
    usage = {"inputTokens": reserve.input_tokens, "outputTokens": s.max_output_tokens}
    assert pricing.actual_micros(s, usage, pricing.EMBEDDING_TOKEN_BOUND) <= reserve.micros
    counted = AWS.replace(**{**EXPLICIT, "model_metering": "count_tokens"})
    assert model_ids.metering_for(counted, COUNT_REGION) == "count_tokens"


def test_an_explicit_price_may_raise_a_catalogued_one_but_never_lower_it():
    raised = Settings().replace(price_input_per_mtok="1.20")
    assert raised.model_terms.input_per_mtok == Decimal("1.20")
    assert raised.model_terms.output_per_mtok == Decimal("5.00")  # the rest: the catalogue's
    with pytest.raises(SettingsError, match="below the catalogue"):
        Settings().replace(model_id=f"us.{HAIKU_45}", price_input_per_mtok="1.00")


def test_counttokens_cannot_be_claimed_for_a_model_the_catalogue_says_has_none():
    with pytest.raises(SettingsError, match="CountTokens does not answer"):
        Settings().replace(model_metering="count_tokens")


def test_more_output_than_the_model_gives_is_refused():
    with pytest.raises(SettingsError, match="max_output_tokens 9000 is above"):
        Settings().replace(model_id=f"us.{catalogue._HAIKU_35}", max_output_tokens=9000)


def test_synthesis_refuses_an_unknown_model_with_one_line():
    context = cdk_context()
    context["chatguard"] = {**context["chatguard"], "model_id": "eu.vendor.some-model-v2:0"}
    with pytest.raises(config.ConfigError) as refused:
        config.load(context)
    assert "\n" not in str(refused.value) and "not in the model catalogue" in str(refused.value)


def test_serve_refuses_an_unknown_model_with_one_line(monkeypatch, capsys):
    monkeypatch.setenv("CHATGUARD_MODEL_ID", "global.vendor.some-model-v2:0")
    assert main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not in the model catalogue" in err
    assert "Traceback" not in err
