"""Each billed call has its own client and timeouts (runtime/clients.py): the run budget is
spent call by call, so a slow guardrail or embedding cannot take Converse's timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from steps.lib.providers import models
from steps.lib.runtime import clients
from steps.lib.runtime.settings import Settings

UNITS = (
    "topicPolicyUnits", "contentPolicyUnits", "wordPolicyUnits",
    "sensitiveInformationPolicyUnits", "sensitiveInformationPolicyFreeUnits",
    "contextualGroundingPolicyUnits",
)  # fmt: skip
GUARDRAIL_NONE = {
    "action": "NONE", "outputs": [], "assessments": [], "usage": dict.fromkeys(UNITS, 0)
}  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    clients.cache_clear()
    yield
    clients.cache_clear()


@pytest.mark.parametrize(
    ("factory", "timeouts"),
    [
        (clients.bedrock_guard, clients.GUARDRAIL),
        (clients.bedrock_embed, clients.EMBEDDING),
        (clients.bedrock_count, clients.COUNT),
        (clients.bedrock_runtime, clients.converse_timeouts(Settings())),
    ],
)
def test_each_bedrock_call_has_its_own_client_timeouts_and_no_retry(
    factory: Any, timeouts: clients.Timeouts
) -> None:
    config = factory().meta.config
    assert config.retries["total_max_attempts"] == timeouts.attempts == 1
    assert (config.connect_timeout, config.read_timeout) == (timeouts.connect, timeouts.read)


def test_the_guardrail_and_the_embedding_are_shorter_than_converse() -> None:
    converse = clients.converse_timeouts(Settings())
    assert clients.GUARDRAIL.worst < converse.worst and clients.EMBEDDING.worst < converse.worst


def test_the_responder_sends_the_guardrail_on_its_own_client() -> None:
    s = Settings(guardrail_id="gr-test", guardrail_version="1")
    responder = models.responder(s)
    guard_client = clients.bedrock_guard()
    assert responder._guard_client is guard_client  # type: ignore[attr-defined]
    with Stubber(guard_client) as stub:
        stub.add_response("apply_guardrail", GUARDRAIL_NONE)
        assert not responder.guard("hello").blocked
    assert responder._client is not guard_client  # type: ignore[attr-defined]
