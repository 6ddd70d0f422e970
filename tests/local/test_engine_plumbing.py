"""The engine plumbing with stand-in handlers: the real ASL on moto's engine, Lambda tasks
in-process, Catch on a raised error's class name, atomic DynamoDB calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from local.runtime import LocalRuntime
from steps.lib.runtime.settings import Settings

from .conftest import ANSWERED_PATH

ALLOWED = {"decision": "allowed"}


# What CostGate hands on: Retrieve and Invoke read the reservation's day from it.
RESERVATION = {"id": "r", "day": "2026-01-01"}


def _stand_ins(invoke_raises: type[Exception] | None = None) -> dict[str, Any]:
    def origin(event: dict[str, Any], _ctx: Any) -> dict[str, Any]:
        return {**ALLOWED, "request": event["body"]}

    def invoke(event: dict[str, Any], _ctx: Any) -> dict[str, Any]:
        if invoke_raises:
            raise invoke_raises("stand-in failure")
        return {
            "reply": "stand-in reply", "sig": "s", "usage": {}, "guardrailTextUnits": 0,
            "costMicros": 0,
        }  # fmt: skip

    return {
        "steps.origin_verify": origin,
        "steps.quota": lambda e, c: {**ALLOWED, "visitor": "v", "day": "2026-01-01"},
        "steps.cost_gate": lambda e, c: {"decision": "reserved", "reservation": RESERVATION},
        "steps.retrieve": lambda e, c: {"grounding": [], "sources": [], "embeddingTokens": 1},
        "steps.invoke": invoke,
        "steps.reconcile": lambda e, c: {"status": "settled"},
        "steps.degraded": lambda e, c: {"statusCode": 200, "body": {}},
    }


@pytest.fixture
def stand_in_runtime(request: pytest.FixtureRequest) -> Any:
    runtime = LocalRuntime(Settings(model_backend="offline"))
    runtime._handlers.update(_stand_ins(getattr(request, "param", None)))
    with runtime:
        yield runtime


def test_the_real_asl_runs_every_task_in_process(stand_in_runtime: LocalRuntime) -> None:
    outcome = stand_in_runtime.send({"message": "hi"}, ip="192.0.2.1")
    assert outcome.status == 200
    assert outcome.body == {"reply": "stand-in reply", "sources": [], "sig": "s"}
    states = [s.state for s in outcome.steps]
    assert states == ANSWERED_PATH
    assert [s.decision for s in outcome.steps[:3]] == ["allowed", "allowed", "reserved"]


@pytest.mark.parametrize("stand_in_runtime", [KeyError], indirect=True)
def test_a_raised_error_is_caught_by_its_class_name(stand_in_runtime: LocalRuntime) -> None:
    outcome = stand_in_runtime.send({"message": "hi"}, ip="192.0.2.1")
    assert outcome.status == 503
    assert "could not answer" in outcome.body["error"]
    assert outcome.steps[-2].decision == "error: KeyError"
    assert outcome.steps[-1].state == "ModelFailed"


def test_a_second_runtime_in_the_same_process_is_refused(stand_in_runtime: LocalRuntime) -> None:
    with pytest.raises(RuntimeError, match="already running"):
        LocalRuntime().start()


def test_dynamodb_calls_are_atomic_under_threads(stand_in_runtime: LocalRuntime) -> None:
    """A conditional write racing on one item admits exactly the capacity, never more."""
    ddb, table = stand_in_runtime.dynamodb, stand_in_runtime.settings.table_name
    admitted: list[int] = []

    def claim() -> None:
        try:
            ddb.update_item(
                TableName=table,
                Key={"pk": {"S": "T"}, "sk": {"S": "T"}},
                UpdateExpression="ADD n :one",
                ConditionExpression="attribute_not_exists(n) OR n < :cap",
                ExpressionAttributeValues={":one": {"N": "1"}, ":cap": {"N": "5"}},
            )
            admitted.append(1)
        except ddb.exceptions.ConditionalCheckFailedException:
            pass

    threads = [threading.Thread(target=claim) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 5


def test_a_cancelled_transaction_changes_nothing(stand_in_runtime: LocalRuntime) -> None:
    """The cheaper rollback of local/dynamo_tx.py keeps TransactWriteItems all-or-nothing."""
    ddb, table = stand_in_runtime.dynamodb, stand_in_runtime.settings.table_name

    def key(name: str) -> dict[str, Any]:
        return {"pk": {"S": name}, "sk": {"S": "x"}}

    ddb.put_item(TableName=table, Item={**key("A"), "n": {"N": "1"}})
    before = stand_in_runtime.ledger_items()
    with pytest.raises(ddb.exceptions.TransactionCanceledException):
        ddb.transact_write_items(TransactItems=[
            {"Update": {"TableName": table, "Key": key("A"), "UpdateExpression": "ADD n :five",
                        "ExpressionAttributeValues": {":five": {"N": "5"}}}},
            {"Put": {"TableName": table, "Item": {**key("B"), "n": {"N": "7"}}}},
            {"ConditionCheck": {"TableName": table, "Key": key("C"),
                                "ConditionExpression": "attribute_exists(pk)"}},
        ])  # fmt: skip
    assert stand_in_runtime.ledger_items() == before
    ddb.transact_write_items(TransactItems=[
        {"Update": {"TableName": table, "Key": key("A"), "UpdateExpression": "ADD n :five",
                    "ExpressionAttributeValues": {":five": {"N": "5"}}}},
    ])  # fmt: skip
    assert stand_in_runtime.ledger_items()[0]["n"] == {"N": "6"}
