"""`chatguard enable-model`: the operator's one first call, on a stubbed Bedrock client."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from chatguard.cli import main
from ops import first_call
from ops.aws import Aws, project_settings

MODEL = project_settings().model_id
EXPECTED_REQUEST = {
    "modelId": MODEL,
    "messages": [{"role": "user", "content": [{"text": first_call.PROMPT}]}],
    "inferenceConfig": {"maxTokens": 1},
}
ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ready"}]}},
    "stopReason": "max_tokens",
    "usage": {"inputTokens": 14, "outputTokens": 1, "totalTokens": 15},
    "metrics": {"latencyMs": 300},
}


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    client = boto3.client(
        "bedrock-runtime",
        region_name="eu-west-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    monkeypatch.setattr(Aws, "client", lambda self, service, region=None: client)
    return client


def test_the_first_call_is_one_minimal_converse_and_reports_its_cost(runtime, capsys) -> None:
    with Stubber(runtime) as stub:
        stub.add_response("converse", ANSWER, EXPECTED_REQUEST)
        code = main(["enable-model"])
        stub.assert_no_pending_responses()
    out = capsys.readouterr().out
    assert code == 0
    # 14 input tokens at 1.00 and 1 output token at 5.00 USD per million tokens.
    assert "14 + 1 tokens, USD 0.000019" in out and "up to 15 minutes" in out


def test_a_refused_first_call_names_every_prerequisite_and_fails(runtime, capsys) -> None:
    message = "Model access is denied due to IAM user or service role is not authorized"
    with Stubber(runtime) as stub:
        stub.add_client_error("converse", "AccessDeniedException", message, 403)
        code = main(["enable-model"])
    captured = capsys.readouterr()
    assert code == 1
    assert f"AccessDeniedException: {message}" in captured.out
    assert "aws-marketplace:Subscribe" in captured.out
    assert "use-case form" in captured.out
    assert first_call.MODEL_ACCESS_DOC in captured.out
    assert "Traceback" not in captured.err


def test_it_does_not_offer_a_local_server(capsys) -> None:
    """It calls Bedrock with the operator's credentials: --local is not among its options."""
    with pytest.raises(SystemExit) as done:
        main(["enable-model", "--local", "http://127.0.0.1:9"])
    assert done.value.code == 2
    assert "unrecognized arguments: --local" in capsys.readouterr().err
