"""Invariants 2 and 3 under injected faults: a dependency failing before the model call
fails closed (503, no model call); a model failure leaves the reservation standing.

Faults are injected at the wire seam (local/engine/wire.py), below the real boto3 clients of the
handlers, so the handlers' own error mapping and retry settings are what is tested. Moto
does not emulate Bedrock Runtime: the Bedrock cases script its answers at the same seam
and run the real Converse adapter (model_backend="bedrock")."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from local.engine.runtime import LocalRuntime
from local.engine.wire import error_response, json_response, timeout_response

from .conftest import QUESTION, VISITOR, day_total, number, reservations

THROTTLED = error_response(400, "ProvisionedThroughputExceededException", "slow down")
UNAVAILABLE = error_response(503, "ServiceUnavailable", "down")
CONVERSE_OK = {
    "output": {"message": {"role": "assistant", "content": [{"text": "A scripted answer."}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 1200, "outputTokens": 80, "totalTokens": 1280},
    "metrics": {"latencyMs": 12},
}


@pytest.mark.parametrize(
    ("fault", "operations", "step"),
    [
        (THROTTLED, ["UpdateItem"], "Quota"),
        (UNAVAILABLE, ["UpdateItem"], "Quota"),
        (UNAVAILABLE, ["TransactWriteItems"], "CostGate"),
    ],
)
def test_dynamodb_failing_before_the_model_fails_closed(
    runtime: LocalRuntime, fault: object, operations: list[str], step: str
) -> None:
    before = reservations(runtime)  # the table may hold an earlier case's void item
    with runtime.wire.fault("dynamodb", fault, operations):  # type: ignore[arg-type]
        outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    # S3's failure goes through S6's release by request id first (it may have reserved).
    released = ["Reconcile"] if step == "CostGate" else []
    assert [s.state for s in outcome.steps][-2 - len(released) :] == [
        step, *released, "FailClosed"
    ]  # fmt: skip
    assert outcome.steps[-2 - len(released)].decision == "error: DependencyUnavailable"
    assert runtime.model_calls == 0 and runtime.embedding_calls == 0
    # Nothing reserved; a failed S3's request id is voided, so nothing can land later.
    added = [r for r in reservations(runtime) if r not in before]
    assert all(r["status"]["S"] == "void" for r in reservations(runtime))
    assert len(added) == len(released) and day_total(runtime) == 0


def test_a_reservation_throttled_past_its_retries_is_answered_degraded(
    runtime: LocalRuntime,
) -> None:
    # Throttling is contention, not an outage: retried for S3's budget, then degraded.
    with runtime.wire.fault("dynamodb", THROTTLED, ["TransactWriteItems"]):
        outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 200 and outcome.body.get("degraded") is True
    assert [s.state for s in outcome.steps][-2:] == ["CostGate", "Degraded"]
    assert runtime.model_calls == 0 and runtime.embedding_calls == 0
    assert reservations(runtime) == [] and day_total(runtime) == 0


def test_ssm_failing_fails_closed_before_any_write(runtime: LocalRuntime) -> None:
    from steps.lib.runtime import secrets

    secrets.cache_clear()  # a cold container: the secrets must be read
    with runtime.wire.fault("ssm", error_response(500, "InternalServerError")):
        outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503  # not 403: an unreadable secret is an outage, not a verdict
    assert outcome.steps[0].decision == "error: DependencyUnavailable"
    assert runtime.ledger_items() == [] and runtime.model_calls == 0


@pytest.fixture
def bedrock_runtime(
    make_runtime: Callable[..., LocalRuntime], monkeypatch: pytest.MonkeyPatch
) -> LocalRuntime:
    """The real Converse adapter; the query embedder stays the offline one (the sample
    index is built offline, and S4 is not what these tests are about)."""
    from steps.lib.providers import models

    runtime = make_runtime(model_backend="bedrock")
    offline = models.query_embedder
    monkeypatch.setattr(
        models,
        "query_embedder",
        lambda s, client=None: offline(s.replace(model_backend="offline")),
    )
    return runtime


def test_a_scripted_bedrock_answer_is_settled_to_its_usage(bedrock_runtime: LocalRuntime) -> None:
    with bedrock_runtime.wire.fault("bedrock-runtime", json_response(CONVERSE_OK), ["Converse"]):
        outcome = bedrock_runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 200 and outcome.body["reply"] == "A scripted answer."
    [reservation] = reservations(bedrock_runtime)
    assert reservation["status"]["S"] == "settled"
    assert 0 < day_total(bedrock_runtime) < number(reservation, "reservedMicros")


@pytest.mark.parametrize(
    "fault",
    [
        timeout_response(),
        error_response(429, "ThrottlingException", "too many tokens"),
        error_response(500, "InternalServerException"),
        error_response(503, "ServiceUnavailableException"),
        json_response(b"{not json"),
        json_response({"output": {}, "stopReason": "end_turn"}),
    ],
    ids=["timeout", "throttled", "5xx", "unavailable", "not-json", "no-output"],
)
def test_a_failed_converse_is_not_retried_and_leaves_the_reservation(
    bedrock_runtime: LocalRuntime, fault: object
) -> None:
    bedrock_runtime.wire.reset_counts()
    with bedrock_runtime.wire.fault("bedrock-runtime", fault, ["Converse"]):  # type: ignore[arg-type]
        outcome = bedrock_runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    assert [s.state for s in outcome.steps][-2:] == ["Invoke", "ModelFailed"]
    assert bedrock_runtime.wire.counts()["bedrock-runtime", "Converse"] == 1  # never retried
    [reservation] = reservations(bedrock_runtime)
    assert reservation["status"]["S"] == "open"
    assert day_total(bedrock_runtime) == number(reservation, "reservedMicros")
