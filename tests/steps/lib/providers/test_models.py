"""Bedrock adapters map every failure to ModelError/EmbeddingError; the offline stand-ins
are deterministic and report usage like Converse."""

from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from botocore.stub import Stubber

from steps.lib.providers import bedrock, models
from steps.lib.providers.offline import ExtractiveResponder, HashingQueryEmbedder
from steps.lib.runtime import clients
from steps.lib.runtime.errors import EmbeddingError, ModelError
from steps.lib.runtime.settings import Settings
from steps.lib.text import prompt, tokens

S = Settings()
GROUNDING = [
    {
        "page": "/posts/waf",
        "heading": "WAF > Windows",
        "text": (
            "A rate rule uses windows of 60, 120, 300 or 600 seconds. "
            "Cats sleep a lot during the day."
        ),
    },
]
MESSAGES = [{"role": "user", "content": [{"text": "Which windows can the rate rule use?"}]}]
GOOD = {
    "output": {"message": {"role": "assistant", "content": [{"text": "60 to 600 seconds."}]}},
    "usage": {
        "inputTokens": 120,
        "outputTokens": 9,
        "totalTokens": 129,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 0,
    },
    "stopReason": "end_turn",
    "metrics": {"latencyMs": 10},
}


def client():
    return boto3.client("bedrock-runtime", region_name="us-east-1")


def test_converse_request_is_bounded_and_never_carries_a_cache_point():
    req = bedrock.BedrockResponder(S, None).request(prompt.system_text(GROUNDING), MESSAGES)
    assert req["inferenceConfig"] == {"maxTokens": S.max_output_tokens}
    assert req["modelId"] == S.model_id
    assert req["system"] == [{"text": prompt.system_text(GROUNDING)}]
    assert "guardrailConfig" not in req


def test_converse_never_carries_a_guardrail_it_would_bill_the_reply_by_characters():
    s = S.replace(guardrail_id="gr-1", guardrail_version="3")
    assert "guardrailConfig" not in bedrock.BedrockResponder(s, None).request("system", MESSAGES)


# ApplyGuardrail's usage: one unit of the topic and the content policy; free units unbilled.
USAGE_UNITS = {
    "topicPolicyUnits": 1, "contentPolicyUnits": 1, "wordPolicyUnits": 0,
    "sensitiveInformationPolicyUnits": 0, "sensitiveInformationPolicyFreeUnits": 3,
    "contextualGroundingPolicyUnits": 0,
}  # fmt: skip


def _guard(response):
    s = S.replace(guardrail_id="gr-1", guardrail_version="3")
    c = client()
    with Stubber(c) as stub:
        expected = {
            "guardrailIdentifier": "gr-1",
            "guardrailVersion": "3",
            "source": "INPUT",
            "content": [{"text": {"text": "Which windows?"}}],
        }
        stub.add_response("apply_guardrail", response, expected)
        return bedrock.BedrockResponder(s, c).guard("Which windows?")


def test_the_guardrail_assesses_exactly_the_message_and_reports_every_policys_units():
    verdict = _guard({"action": "NONE", "outputs": [], "assessments": [], "usage": USAGE_UNITS})
    assert verdict == models.GuardVerdict(blocked=False, text="", units=2)


def test_a_guardrail_intervention_carries_its_own_answer():
    response = {
        "action": "GUARDRAIL_INTERVENED",
        "outputs": [{"text": "Sorry, I cannot discuss that."}],
        "assessments": [],
        "usage": USAGE_UNITS,
    }
    assert _guard(response) == models.GuardVerdict(True, "Sorry, I cannot discuss that.", 2)


def test_a_failed_guardrail_call_is_model_error_so_the_reservation_stands():
    s = S.replace(guardrail_id="gr-1", guardrail_version="3")
    c = client()
    with Stubber(c) as stub, pytest.raises(ModelError, match="ApplyGuardrail"):
        stub.add_client_error("apply_guardrail", "ThrottlingException", "slow down", 429)
        bedrock.BedrockResponder(s, c).guard("Which windows?")


def test_converse_success_is_parsed():
    c = client()
    with Stubber(c) as stub:
        stub.add_response("converse", GOOD)
        reply = bedrock.BedrockResponder(S, c).converse(system="sys", messages=MESSAGES)
    assert reply.text == "60 to 600 seconds."
    assert models.usage_of(reply) == {
        "inputTokens": 120,
        "outputTokens": 9,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 0,
    }


@pytest.mark.parametrize(
    "code",
    [
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "ValidationException",
        "AccessDeniedException",
    ],
)
def test_converse_client_errors_become_model_error(code):
    c = client()
    with Stubber(c) as stub:
        stub.add_client_error("converse", code, http_status_code=503)
        with pytest.raises(ModelError, match=code):
            bedrock.BedrockResponder(S, c).converse(system="s", messages=MESSAGES)


@pytest.mark.parametrize(
    "exc",
    [ReadTimeoutError(endpoint_url="https://x"), ConnectTimeoutError(endpoint_url="https://x")],
)
def test_converse_timeouts_become_model_error(exc):
    class Raising:
        def converse(self, **kw):
            raise exc

    with pytest.raises(ModelError, match=type(exc).__name__):
        bedrock.BedrockResponder(S, Raising()).converse(system="s", messages=MESSAGES)


@pytest.mark.parametrize(
    "response",
    [
        {},
        {"usage": GOOD["usage"]},
        {"output": GOOD["output"]},
        {"output": {"message": {"content": []}}, "usage": GOOD["usage"]},
        {**GOOD, "usage": {"inputTokens": -1}},
        {**GOOD, "usage": {"inputTokens": "12"}},
    ],
)
def test_a_malformed_converse_response_is_model_error(response):
    with pytest.raises(ModelError):
        bedrock.parse_converse(response)


def test_the_converse_client_never_retries_and_has_explicit_timeouts(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    config = clients.bedrock_runtime().meta.config
    assert config.retries["total_max_attempts"] == 1
    assert (config.connect_timeout, config.read_timeout) == (
        S.bedrock_connect_timeout_seconds,
        S.bedrock_read_timeout_seconds,
    )


def test_titan_query_embedding_returns_vector_and_token_count():
    c = client()
    body = json.dumps({"embedding": [0.5] * 4, "inputTextTokenCount": 7}).encode()
    with Stubber(c) as stub:
        stub.add_response(
            "invoke_model", {"body": io.BytesIO(body), "contentType": "application/json"}
        )
        vector, count = bedrock.TitanEmbedder(S, c).embed_query("hello")
    assert vector.shape == (4,) and count == 7
    assert (
        bedrock.TitanEmbedder(S, c).id == f"bedrock:{S.embedding_model_id}:{S.embedding_dimensions}"
    )


def test_titan_failures_become_embedding_error():
    c = client()
    with Stubber(c) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException")
        with pytest.raises(EmbeddingError):
            bedrock.TitanEmbedder(S, c).embed_query("hello")


def test_the_extractive_responder_answers_from_the_reference_deterministically():
    responder = ExtractiveResponder(S)
    system = prompt.system_text(GROUNDING)
    first = responder.converse(system=system, messages=MESSAGES)
    again = responder.converse(system=system, messages=MESSAGES)
    assert first == again
    assert "60, 120, 300 or 600 seconds" in first.text and "Cats" not in first.text
    assert first.usage["inputTokens"] == tokens.count_tokens(system) + tokens.count_tokens(
        MESSAGES[0]["content"][0]["text"]
    )
    assert first.usage["outputTokens"] == tokens.count_tokens(first.text) <= S.max_output_tokens


def test_the_extractive_responder_says_when_it_has_nothing():
    reply = ExtractiveResponder(S).converse(system=prompt.system_text([]), messages=MESSAGES)
    assert (
        reply.text
        == "I could not find anything about that on this site, so I would rather not guess."
    )


def test_offline_seams_select_the_stand_ins():
    # The hashing stand-in is asked for by name (the offline default is the local model:
    # test_local_embedder.py).
    s = S.replace(model_backend="offline", embedder="hashing")
    assert isinstance(models.responder(s), ExtractiveResponder)
    embedder = models.query_embedder(s)
    assert isinstance(embedder, HashingQueryEmbedder) and embedder.id == "hashing-v2"
    vector, count = embedder.embed_query("rate limiting")
    assert vector.shape == (S.embedding_dimensions,) and count == tokens.count_tokens(
        "rate limiting"
    )


def test_the_bedrock_seams_build_on_an_injected_client():
    """A test hands the seam its client (here one under a Stubber) instead of patching the
    container's clients."""
    s, c = S.replace(model_backend="bedrock"), client()
    with Stubber(c) as stub:
        stub.add_response("converse", GOOD)
        reply = models.responder(s, client=c).converse(system="s", messages=MESSAGES)
        stub.assert_no_pending_responses()
    assert reply.text == "60 to 600 seconds."
    body = json.dumps({"embedding": [0.5] * 4, "inputTextTokenCount": 3}).encode()
    with Stubber(c) as stub:
        stub.add_response(
            "invoke_model", {"body": io.BytesIO(body), "contentType": "application/json"}
        )
        vector, count = models.query_embedder(s, client=c).embed_query("hello")
    assert vector.shape == (4,) and count == 3
