"""`--model bedrock`: the local state machine with real botocore Bedrock clients, answered
by botocore's Stubber (no network). The reservation, the hard cap and the guardrail work
as deployed; set-up problems (no credentials, no Region, an unknown profile, no model
access) are one line before anything starts."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.config import Config
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from chatguard.cli import main
from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from local.engine import bedrock_access
from local.engine.bedrock_access import BedrockAccess, BedrockSetupError, check_models, open_access
from local.engine.runtime import LocalRuntime
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.money import pricing
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import shared
from steps.lib.runtime.settings import PROJECT_ROOT, Settings

from .conftest import QUESTION, VISITOR, day_total, reservations

REGION = "eu-west-1"
REPLY = "Stubbed Converse: the rate rule counts requests per address."
USAGE = {"inputTokens": 1200, "outputTokens": 40, "totalTokens": 1240}
AVAILABLE = {"agreementAvailability": {"status": "AVAILABLE"}, "authorizationStatus": "AUTHORIZED",
             "entitlementAvailability": "AVAILABLE", "regionAvailability": "AVAILABLE"}  # fmt: skip


class TitanIdHashingEmbedder(HashingEmbedder):
    """A test stand-in that builds an index under Titan's embedder id with hashing vectors,
    so the local runtime with `--model bedrock` accepts it (no Titan call at index time)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.embedding_dimensions)
        self.id = bedrock_embedder_id(settings.embedding_model_id, settings.embedding_dimensions)


@pytest.fixture(scope="module")
def titan_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As `chatguard index --embedder titan` writes it: Titan's matrix (a stand-in here)
    and the local model's beside, which the degraded answer ranks with."""
    out = tmp_path_factory.mktemp("titan-knowledge")
    policy = IndexPolicy.from_context()
    local = CachedLocalEmbedder(shared, cache_path=out.parent / "local-cache.json")
    titan = TitanIdHashingEmbedder(Settings())
    build(PROJECT_ROOT / "examples" / "site", out, policy, titan, local)
    return out


@pytest.fixture
def no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials anywhere, and no instance-metadata lookup (loopback only here)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty-aws-file"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _runtime_client() -> Any:
    config = Config(retries={"total_max_attempts": 1})
    return boto3.client(
        "bedrock-runtime", region_name=REGION, config=config,
        aws_access_key_id="test-key", aws_secret_access_key="test-secret",
    )  # fmt: skip


@pytest.fixture
def bedrock(titan_index: Path) -> Iterator[tuple[LocalRuntime, Stubber, Settings]]:
    settings = Settings().replace(
        model_backend="bedrock", knowledge_dir=titan_index, guardrail_id="gr-test",
        guardrail_version="3", visitor_message_limit=100, daily_ceiling_usd="5",
    )  # fmt: skip
    client = _runtime_client()
    with Stubber(client) as stubber, LocalRuntime(settings, bedrock_client=client) as runtime:
        yield runtime, stubber, runtime.settings


def _titan(stubber: Stubber, settings: Settings, text: str) -> None:
    vector = HashingEmbedder(settings.embedding_dimensions).embed([text])[0]
    payload = json.dumps({"embedding": np.asarray(vector).tolist(), "inputTextTokenCount": 11})
    body = StreamingBody(io.BytesIO(payload.encode()), len(payload))
    stubber.add_response(
        "invoke_model",
        {"body": body, "contentType": "application/json"},
        {"modelId": settings.embedding_model_id, "body": ANY,
         "contentType": "application/json", "accept": "application/json"},
    )  # fmt: skip


def _guard(stubber: Stubber, units: int = 0) -> None:
    """ApplyGuardrail on the message alone, before the call; it passes it."""
    stubber.add_response(
        "apply_guardrail",
        {"action": "NONE", "outputs": [], "assessments": [],
         "usage": {"topicPolicyUnits": units, "contentPolicyUnits": units,
                   "wordPolicyUnits": 0, "sensitiveInformationPolicyUnits": 0,
                   "sensitiveInformationPolicyFreeUnits": 0,
                   "contextualGroundingPolicyUnits": 0}},
        {"guardrailIdentifier": "gr-test", "guardrailVersion": "3", "source": "INPUT",
         "content": [{"text": {"text": QUESTION["message"]}}]},
    )  # fmt: skip


def _converse(stubber: Stubber, settings: Settings) -> None:
    stubber.add_response(
        "converse",
        {"output": {"message": {"role": "assistant", "content": [{"text": REPLY}]}},
         "stopReason": "end_turn", "usage": USAGE, "metrics": {"latencyMs": 420}},
        {"modelId": settings.model_id, "system": ANY, "messages": ANY,
         "inferenceConfig": {"maxTokens": settings.max_output_tokens}},
    )  # fmt: skip


@pytest.mark.slow
def test_a_message_runs_the_state_machine_on_real_bedrock_clients(
    bedrock: tuple[LocalRuntime, Stubber, Settings],
) -> None:
    runtime, stubber, settings = bedrock
    _titan(stubber, settings, QUESTION["message"])
    _guard(stubber)
    _converse(stubber, settings)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 200, outcome.body
    assert outcome.body["reply"] == REPLY and outcome.body["sig"]
    stubber.assert_no_pending_responses()  # exactly one Titan, guardrail and Converse call
    (reservation,) = reservations(runtime)
    assert reservation["status"]["S"] == "settled"
    # Priced from what the stubbed Converse and Titan reported, exactly as deployed.
    # The guardrail reported no units: the units it assessed (the message) are settled
    # all the same.
    units = pricing.assessed_units(settings, QUESTION["message"])
    expected = pricing.actual_micros(
        settings, USAGE, embedding_tokens=11, guardrail_text_units=units
    )
    assert int(reservation["actualMicros"]["N"]) == expected
    assert (
        expected
        <= int(reservation["reservedMicros"]["N"])
        <= pricing.largest_reserve_micros(settings)
    )
    assert day_total(runtime) == expected


@pytest.mark.slow
def test_the_hard_cap_holds_before_any_bedrock_call(titan_index: Path) -> None:
    settings = Settings().replace(
        model_backend="bedrock", knowledge_dir=titan_index, daily_ceiling_usd="0.001"
    )
    client = _runtime_client()
    with Stubber(client) as stubber, LocalRuntime(settings, bedrock_client=client) as runtime:
        outcome = runtime.send(QUESTION, ip=VISITOR)  # no response queued: a call would fail
        stubber.assert_no_pending_responses()
    assert outcome.status == 200 and outcome.body["degraded"] is True
    assert runtime.model_calls == 0 and runtime.embedding_calls == 0


@pytest.mark.slow
def test_a_bedrock_failure_fails_closed_and_the_reservation_stands(
    bedrock: tuple[LocalRuntime, Stubber, Settings],
) -> None:
    runtime, stubber, settings = bedrock
    _titan(stubber, settings, QUESTION["message"])
    _guard(stubber)
    stubber.add_client_error("converse", "ThrottlingException", "slow down", 429)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    (reservation,) = reservations(runtime)
    assert reservation["status"]["S"] == "open"  # over-counts, never under-counts
    assert day_total(runtime) == int(reservation["reservedMicros"]["N"])


def _access(control: Any) -> BedrockAccess:
    return BedrockAccess(session=None, region=REGION, runtime=None, control=control)


def _control() -> Any:
    return boto3.client("bedrock", region_name=REGION, aws_access_key_id="k",
                        aws_secret_access_key="s")  # fmt: skip


def test_model_access_is_checked_on_the_foundation_models_for_free() -> None:
    settings = Settings()
    control = _control()
    with Stubber(control) as stubber:
        for model in ("anthropic.claude-haiku-4-5-20251001-v1:0", settings.embedding_model_id):
            stubber.add_response("get_foundation_model_availability",
                                 {"modelId": model, **AVAILABLE}, {"modelId": model})  # fmt: skip
        check_models(_access(control), settings)
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"authorizationStatus": "NOT_AUTHORIZED"}, "no access to"),
        (
            {"entitlementAvailability": "NOT_AVAILABLE"},
            "`chatguard enable-model --region eu-west-1`",
        ),
        ({"regionAvailability": "NOT_AVAILABLE"}, "not available in eu-west-1"),
        ("UnrecognizedClientException", "rejected the credentials"),
        ("ExpiredTokenException", "rejected the credentials"),
        ("AccessDeniedException", "bedrock:GetFoundationModelAvailability is denied"),
        ("ValidationException", "does not offer"),
    ],
)
def test_a_missing_grant_is_one_line(answer: dict[str, str] | str, says: str) -> None:
    control = _control()
    model = "anthropic.claude-haiku-4-5-20251001-v1:0"
    with Stubber(control) as stubber:
        if isinstance(answer, str):
            stubber.add_client_error("get_foundation_model_availability", answer, "no", 400)
        else:
            stubber.add_response("get_foundation_model_availability",
                                 {"modelId": model, **AVAILABLE, **answer})  # fmt: skip
        with pytest.raises(BedrockSetupError) as refused:
            check_models(_access(control), Settings())
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_an_unreachable_region_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import EndpointConnectionError

    control = _control()

    def unreachable(**_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="https://bedrock.eu-west-1.amazonaws.com")

    monkeypatch.setattr(control, "get_foundation_model_availability", unreachable)
    with pytest.raises(BedrockSetupError, match="cannot reach Bedrock in eu-west-1"):
        check_models(_access(control), Settings())


def test_inference_profiles_map_to_their_foundation_model() -> None:
    assert bedrock_access.foundation_model("global.anthropic.x-v1:0") == "anthropic.x-v1:0"
    assert bedrock_access.foundation_model("eu.anthropic.x-v1:0") == "anthropic.x-v1:0"
    assert bedrock_access.foundation_model("amazon.titan-embed-text-v2:0") == (
        "amazon.titan-embed-text-v2:0"
    )


@pytest.mark.usefixtures("no_aws_environment")
@pytest.mark.parametrize(
    ("profile", "region", "says"),
    [
        (None, REGION, "no AWS credentials found"),
        (None, None, "no AWS Region"),
        ("nobody", REGION, "profile 'nobody' not found"),
        (None, "not a region!", "not a usable AWS Region"),
    ],
)
def test_set_up_problems_are_one_line(
    profile: str | None, region: str | None, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if region == "not a region!":
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    with pytest.raises(BedrockSetupError) as refused:
        open_access(profile, region, Settings())
    assert says in str(refused.value)


@pytest.mark.usefixtures("no_aws_environment")
def test_chat_with_bedrock_and_no_credentials_is_one_line_not_a_503(
    titan_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["chat", "hello", "--model", "bedrock", "--region", REGION,
            "--knowledge", str(titan_index)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("chatguard chat: no AWS credentials found") and err.count("\n") == 1


def test_aws_flags_without_bedrock_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "hello", "--region", REGION]) == 2
    assert "--region need --model bedrock" in capsys.readouterr().err


def test_the_offline_index_is_refused_for_bedrock_with_the_titan_command(
    knowledge_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["chat", "hello", "--model", "bedrock", "--region", REGION,
            "--knowledge", str(knowledge_dir)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "rebuild" in err and f"--embedder titan --region {REGION}" in err


def test_the_wire_lets_only_bedrock_runtime_reach_aws() -> None:
    from botocore.exceptions import EndpointConnectionError

    from local.engine.wire import Wire

    class Request:
        headers: dict[str, str] = {}

        def __init__(self, url: str) -> None:
            self.url = url

    bedrock_url = f"https://bedrock-runtime.{REGION}.amazonaws.com/model/m/converse"
    real = Wire(frozenset({"bedrock-runtime"}))
    assert real._process(lambda r: None, Request(bedrock_url)) is None  # sent to AWS
    with pytest.raises(EndpointConnectionError):
        real._process(lambda r: None, Request(f"https://sts.{REGION}.amazonaws.com/"))
    with pytest.raises(EndpointConnectionError):
        Wire()._process(lambda r: None, Request(bedrock_url))  # offline: never the network


@pytest.mark.slow
def test_inside_the_runtime_moto_hands_bedrock_runtime_to_aws(
    bedrock: tuple[LocalRuntime, Stubber, Settings],
) -> None:
    """What botocore's before-send hook does with a real Converse request while the runtime
    runs: moto passes it through and the wire lets it go (offline it would be refused)."""
    from botocore.awsrequest import AWSPreparedRequest
    from moto.core.models import botocore_stubber

    url = f"https://bedrock-runtime.{REGION}.amazonaws.com/model/m/converse"
    request = AWSPreparedRequest("POST", url, {}, b"{}", False)
    assert botocore_stubber.process_request(request) is None  # botocore sends it for real
    sts = AWSPreparedRequest("POST", f"https://sts.{REGION}.amazonaws.com/", {}, b"", False)
    assert botocore_stubber.process_request(sts) is not None  # everything else stays on moto
