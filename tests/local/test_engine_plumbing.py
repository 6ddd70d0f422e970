"""The engine plumbing with stand-in handlers: the real ASL on moto's engine, Lambda tasks
in-process, Catch on a raised error's class name, atomic DynamoDB calls."""

from __future__ import annotations

import select
import threading
from typing import Any

import pytest

from local.engine.runtime import LocalRuntime
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
    # One Lambda invocation per Task state (Answer is a Pass state), each counted.
    assert stand_in_runtime.wire.counts()["lambda", "Invoke"] == len(ANSWERED_PATH) - 1
    assert [s.decision for s in outcome.steps[:3]] == ["allowed", "allowed", "reserved"]


@pytest.mark.parametrize("stand_in_runtime", [KeyError], indirect=True)
def test_a_raised_error_is_caught_by_its_class_name(stand_in_runtime: LocalRuntime) -> None:
    outcome = stand_in_runtime.send({"message": "hi"}, ip="192.0.2.1")
    assert outcome.status == 503
    assert "could not answer" in outcome.body["error"]
    assert outcome.steps[-2].decision == "error: KeyError"
    assert outcome.steps[-1].state == "ModelFailed"


def test_an_unknown_function_is_lambdas_resource_not_found(stand_in_runtime: LocalRuntime) -> None:
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        stand_in_runtime._engine._lambda.invoke(FunctionName="chatguard-NoSuchStep", Payload=b"{}")


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
    """The cheaper rollback of local/engine/dynamo_tx.py keeps TransactWriteItems all-or-nothing."""
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


# -- the wait: woken by the execution's end (local/engine/step_functions.py), every ending returned


@pytest.fixture
def signal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait's safety recheck pushed out to an hour: only the ending's signal can wake it
    before the engine's own timeout (60 s), which then answers TIMED_OUT and fails the
    test. A wait that polled, or a signal that never came, fails these tests."""
    monkeypatch.setattr("local.engine.step_functions._RECHECK_SECONDS", 3600.0)


def _runs(runtime: LocalRuntime, handlers: dict[str, Any]) -> Any:
    runtime._handlers.update(handlers)
    return runtime._engine.run(
        {"requestId": "r", "body": {}, "originVerify": "", "viewerAddress": ""}
    )


@pytest.mark.usefixtures("signal_only")
def test_a_run_that_succeeds_returns_its_output(stand_in_runtime: LocalRuntime) -> None:
    finished = _runs(stand_in_runtime, {})
    assert finished.status == "SUCCEEDED"
    assert finished.output["statusCode"] == 200
    assert finished.states[-1] == "Answer"


@pytest.mark.usefixtures("signal_only")
def test_a_run_that_fails_returns_failed(stand_in_runtime: LocalRuntime) -> None:
    # Invoke answers without a reply: the Answer Pass state cannot build its body, an error
    # no Catch takes (a Pass state has none), so the execution itself ends FAILED.
    invoked = {"usage": {}, "guardrailTextUnits": 0, "costMicros": 0}
    finished = _runs(stand_in_runtime, {"steps.invoke": lambda e, c: invoked})
    assert (finished.status, finished.output) == ("FAILED", None)
    assert finished.states[-1] == "Answer"


@pytest.mark.usefixtures("signal_only")
def test_a_run_stopped_while_running_returns_aborted(stand_in_runtime: LocalRuntime) -> None:
    from moto.stepfunctions.responses import get_backend

    engine = stand_in_runtime._engine

    def stopped(_event: dict[str, Any], _ctx: Any) -> dict[str, Any]:
        backend = get_backend("123456789012", engine.region)
        machine = backend.describe_state_machine(engine.state_machine_arn)
        for execution in machine.executions:
            backend.stop_execution(execution.execution_arn)
        return ALLOWED

    finished = _runs(stand_in_runtime, {"steps.quota": stopped})
    assert finished.status == "ABORTED"


def test_a_run_over_the_public_api_returns_the_same_answer(stand_in_runtime: LocalRuntime) -> None:
    """The benchmark's alternative (StartExecution, then DescribeExecution polled)."""
    by_object = stand_in_runtime.send({"message": "hi"}, ip="192.0.2.1")
    over_api = stand_in_runtime.send({"message": "hi"}, ip="192.0.2.2", over_api=True)
    assert (
        (over_api.status, over_api.body)
        == (by_object.status, by_object.body)
        == (
            200,
            {"reply": "stand-in reply", "sources": [], "sig": "s"},
        )
    )


def test_the_engine_timeout_still_ends_a_run_that_never_finishes(
    stand_in_runtime: LocalRuntime,
) -> None:
    release = threading.Event()

    def stuck(_event: dict[str, Any], _ctx: Any) -> dict[str, Any]:
        release.wait()
        return ALLOWED

    stand_in_runtime._engine._timeout = 0.01
    try:
        finished = _runs(stand_in_runtime, {"steps.quota": stuck})
    finally:
        release.set()
    assert (finished.status, finished.error) == ("TIMED_OUT", "local engine timeout")


def test_an_ending_signalled_while_the_wait_sleeps_wakes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sleep ends because an ending woke it (its select found a byte), not because its
    time ran out: a wait that nobody wakes sleeps out its recheck here, and fails."""
    from local.engine import wakeup
    from local.engine.step_functions import Engine

    woken: list[bool] = []

    def recorded(*args: Any) -> Any:
        result = select.select(*args)
        woken.append(bool(result[0]))
        return result

    monkeypatch.setattr(wakeup, "select", recorded)
    engine = Engine(region="us-east-1", dispatch=lambda *a: None, timeout_seconds=30)
    ended = threading.Event()

    def end() -> None:
        ended.set()
        engine._execution_ended()

    def done() -> bool:
        finished = ended.is_set()
        if not woken and not finished:
            threading.Thread(target=end).start()
        return finished

    assert engine._wait(done) is True
    assert woken == [True]


def test_a_wait_past_its_timeout_returns_false_without_an_ending() -> None:
    from local.engine.step_functions import Engine

    engine = Engine(region="us-east-1", dispatch=lambda *a: None, timeout_seconds=0)
    assert engine._wait(lambda: False) is False
