"""`doctor --cold` on a stubbed account (botocore Stubber): fresh environments, one message,
each step's REPORT line, and the verdict. Stubber refuses any call it was not told to expect."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import botocore.session
import pytest
from botocore.stub import ANY, Stubber

from infra import cold_model
from ops.doctor import cold as doctor_cold

FUNCTIONS = {"Quota": "chatguard-Quota", "Invoke": "chatguard-Invoke"}
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _client(service: str):
    session = botocore.session.get_session()
    return session.create_client(
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _report(init: float | None, duration: float = 42.0) -> str:
    tail = f"\tInit Duration: {init} ms\t" if init is not None else "\t"
    return (
        f"REPORT RequestId: 3f1c\tDuration: {duration} ms\tBilled Duration: 43 ms\t"
        f"Memory Size: 1769 MB\tMax Memory Used: 90 MB{tail}"
    )


def test_a_report_line_gives_duration_and_init_or_says_it_was_warm():
    assert doctor_cold.parse_report(_report(512.3)) == doctor_cold.Report(42.0, 512.3)
    assert doctor_cold.parse_report(_report(None)) == doctor_cold.Report(42.0, None)
    assert doctor_cold.parse_report("START RequestId: 3f1c Version: $LATEST") is None


def test_every_step_gets_a_new_configuration_and_is_waited_for():
    client = _client("lambda")
    slept: list[float] = []
    with Stubber(client) as stub:
        for name in FUNCTIONS.values():
            stub.add_response(
                "get_function_configuration",
                {"Environment": {"Variables": {"CHATGUARD_TABLE_NAME": "chatguard"}}},
                {"FunctionName": name},
            )
            stub.add_response(
                "update_function_configuration", {},
                {"FunctionName": name, "Environment": {"Variables": {
                    "CHATGUARD_TABLE_NAME": "chatguard", "CHATGUARD_COLD_CHECK": "s1"}}},
            )  # fmt: skip
        stub.add_response("get_function_configuration", {"LastUpdateStatus": "InProgress"})
        stub.add_response("get_function_configuration", {"LastUpdateStatus": "Successful"})
        stub.add_response("get_function_configuration", {"LastUpdateStatus": "Successful"})
        doctor_cold.fresh_environments(client, FUNCTIONS, "s1", sleep=slept.append)
        stub.assert_no_pending_responses()
    assert slept == [2]  # the existing variables kept, one added; waited until Successful


def test_a_failed_update_stops_the_check():
    client = _client("lambda")
    with Stubber(client) as stub:
        stub.add_response("get_function_configuration", {}, {"FunctionName": "f"})
        stub.add_response("update_function_configuration", {}, {"FunctionName": "f",
                          "Environment": {"Variables": {"CHATGUARD_COLD_CHECK": "s"}}})  # fmt: skip
        stub.add_response(
            "get_function_configuration",
            {"LastUpdateStatus": "Failed", "LastUpdateStatusReason": "KMS key disabled"},
        )
        with pytest.raises(RuntimeError, match="KMS key disabled"):
            doctor_cold.fresh_environments(client, {"S": "f"}, "s", sleep=lambda s: None)


def test_reports_are_polled_until_every_step_has_one():
    logs = _client("logs")
    groups = {"Quota": "/aws/lambda/q", "Invoke": "/aws/lambda/i"}
    slept: list[float] = []
    with Stubber(logs) as stub:
        expected = {"logGroupName": ANY, "startTime": 1000, "filterPattern": '"REPORT RequestId"'}
        stub.add_response("filter_log_events", {"events": [{"message": _report(300.0)}]},
                          expected)  # fmt: skip
        stub.add_response("filter_log_events", {"events": []}, expected)  # not delivered yet
        stub.add_response("filter_log_events", {"events": [{"message": _report(700.0)}]},
                          expected)  # fmt: skip
        found = doctor_cold.reports(logs, groups, 1000, sleep=slept.append)
        stub.assert_no_pending_responses()
    assert {s: [line.report for line in lines] for s, lines in found.items()} == {
        "Quota": [doctor_cold.Report(42.0, 300.0)], "Invoke": [doctor_cold.Report(42.0, 700.0)]
    }  # fmt: skip
    assert slept == [5]


def _logged(stream: str, at_ms: int, init: float | None, duration: float) -> doctor_cold.Logged:
    return doctor_cold.Logged(stream, at_ms, doctor_cold.Report(duration, init))


S1_END = 1_000_000  # ms: S1's REPORT line


def test_a_real_call_in_the_woken_environments_stream_was_served_by_the_wake():
    # The wake reached S4 250 ms after S1 ended, spent 600 ms in INIT and 1 ms answering;
    # the real call came later to the same stream (environment), without an Init Duration.
    wake = _logged("2026/11/29/[$LATEST]aaa", S1_END + 851, 600.0, 1.0)
    real = _logged("2026/11/29/[$LATEST]aaa", S1_END + 1_200, None, 14.0)
    found = doctor_cold.wake_of([real, wake], S1_END)
    assert found == doctor_cold.Wake(doctor_cold.Report(14.0, 600.0), True, 250.0)


def test_a_real_call_on_an_environment_of_its_own_means_the_wake_lost():
    # Delivered late: the real call started first on its own environment; the wake started
    # later (its start, not its end, tells which is which).
    real = _logged("stream-real", S1_END + 1_400, 610.0, 14.0)
    wake = _logged("stream-wake", S1_END + 1_350, 600.0, 1.0)
    found = doctor_cold.wake_of([wake, real], S1_END)
    assert found is not None and not found.served
    assert found.real == doctor_cold.Report(14.0, 610.0)  # the INIT paid on the path
    assert found.gap_ms == pytest.approx(749.0)
    assert doctor_cold.wake_of([real], S1_END) is None  # one invocation: no wake reached it


def test_one_message_goes_through_the_workflow_with_the_origin_secret():
    sfn = _client("stepfunctions")
    answer = {"executionArn": "arn:aws:states:us-east-1:1:express:m:e:x", "startDate": START,
              "stopDate": START + timedelta(seconds=4), "status": "SUCCEEDED",
              "output": json.dumps({"statusCode": 200})}  # fmt: skip
    with Stubber(sfn) as stub:
        stub.add_response("start_sync_execution", answer, {"stateMachineArn": "m", "input": ANY})
        got = doctor_cold.send_one(sfn, "m", "the-origin-secret")
        stub.assert_no_pending_responses()
    assert got["status"] == "SUCCEEDED"


def test_the_input_is_the_mapping_templates_shape():
    class Recorder:
        def start_sync_execution(self, **kwargs):
            self.kwargs = kwargs
            return {}

    recorder = Recorder()
    doctor_cold.send_one(recorder, "m", "the-origin-secret")
    payload = json.loads(recorder.kwargs["input"])
    assert payload["originVerify"] == "the-origin-secret"
    assert payload["body"] == {"message": doctor_cold.QUESTION}
    assert set(payload) == {"requestId", "originVerify", "viewerAddress", "body"}


def _answer(status: str, code: int | None) -> dict:
    return {"startDate": START, "stopDate": START + timedelta(seconds=3.2), "status": status,
            "output": json.dumps({"statusCode": code})}  # fmt: skip


MEMORY = cold_model.memory()
COLD = {s: doctor_cold.Report(40.0, 400.0) for s in cold_model.ANSWERED}


def test_an_answered_cold_message_passes_and_prints_each_steps_init_beside_the_model():
    check = doctor_cold.verdict(_answer("SUCCEEDED", 200), COLD, MEMORY)
    assert check.outcome == "PASS"
    assert "whole message 3.20 s" in check.detail
    src = cold_model.init_seconds("Quota", "source", MEMORY["Quota"]) * 1000
    assert f"Quota{400:>17}{src:>11.0f}" in check.detail


def test_a_cold_message_refused_by_the_budget_is_a_fail():
    check = doctor_cold.verdict(_answer("SUCCEEDED", 503), COLD, MEMORY)
    assert check.outcome == "FAIL" and "HTTP 503" in check.detail and "NotSent" in check.fix
    assert doctor_cold.verdict(_answer("TIMED_OUT", None), COLD, MEMORY).outcome == "FAIL"


def test_a_step_that_was_not_cold_cannot_pass():
    warm = {**COLD, "Reconcile": doctor_cold.Report(40.0, None)}
    check = doctor_cold.verdict(_answer("SUCCEEDED", 200), warm, MEMORY)
    assert check.outcome == "CANNOT TEST" and check.detail.startswith("Reconcile gave no")
    missing = {s: r for s, r in COLD.items() if s != "Invoke"}
    assert doctor_cold.verdict(_answer("SUCCEEDED", 200), missing, MEMORY).outcome == "CANNOT TEST"


class StubbedAccount:
    """The operator's account: one stubbed client per service (Stubber refuses the rest)."""

    stack = "Chatguard"

    def __init__(self) -> None:
        self.clients = {s: _client(s) for s in
                        ("cloudformation", "lambda", "ssm", "stepfunctions", "logs")}  # fmt: skip
        self.stubs = {s: Stubber(c) for s, c in self.clients.items()}

    def client(self, service: str):
        return self.clients[service]


def _account(
    output_status: int, *, init: float | None = 300.0, served: bool = True
) -> StubbedAccount:
    from steps.lib.runtime.stages import STAGES

    account = StubbedAccount()
    names = {s.state: f"chatguard-{s.state}" for s in STAGES}
    resources = [{"LogicalResourceId": f"{s}Function1A2B", "PhysicalResourceId": n,
                  "ResourceType": "AWS::Lambda::Function", "ResourceStatus": "CREATE_COMPLETE",
                  "LastUpdatedTimestamp": START} for s, n in names.items()]  # fmt: skip
    machine = {"LogicalResourceId": "Workflow", "PhysicalResourceId": "arn:machine",
               "ResourceType": "AWS::StepFunctions::StateMachine",
               "ResourceStatus": "CREATE_COMPLETE", "LastUpdatedTimestamp": START}  # fmt: skip
    resources.append(machine)
    account.stubs["cloudformation"].add_response(
        "list_stack_resources", {"StackResourceSummaries": resources}, {"StackName": "Chatguard"}
    )
    lam = account.stubs["lambda"]
    for state, name in names.items():
        env = {"CHATGUARD_ORIGIN_SECRET_PARAM": "/x/origin"} if state == "OriginVerify" else {}
        lam.add_response("get_function_configuration", {
            "MemorySize": 1769, "LoggingConfig": {"LogGroup": f"/logs/{state}"},
            "Environment": {"Variables": env}}, {"FunctionName": name})  # fmt: skip
    answered = [names[s] for s in cold_model.ANSWERED]
    for name in answered:
        lam.add_response("get_function_configuration", {}, {"FunctionName": name})
        lam.add_response("update_function_configuration", {}, {"FunctionName": name,
                         "Environment": {"Variables": {"CHATGUARD_COLD_CHECK": ANY}}})  # fmt: skip
    for name in answered:
        lam.add_response("get_function_configuration", {"LastUpdateStatus": "Successful"},
                         {"FunctionName": name})  # fmt: skip
    secret = json.dumps({"current": "origin-secret-value", "previous": None})
    account.stubs["ssm"].add_response(
        "get_parameter", {"Parameter": {"Value": secret}},
        {"Name": "/x/origin", "WithDecryption": True},
    )  # fmt: skip
    account.stubs["stepfunctions"].add_response("start_sync_execution", {
        "executionArn": "arn:e", "startDate": START, "stopDate": START + timedelta(seconds=4),
        "status": "SUCCEEDED", "output": json.dumps({"statusCode": output_status})},
        {"stateMachineArn": "arn:machine", "input": ANY})  # fmt: skip
    for at, state in enumerate(cold_model.ANSWERED):
        events = [{"message": _report(init), "logStreamName": f"{state}-1",
                   "timestamp": S1_END + 1000 * at}]  # fmt: skip
        if state in cold_model.WOKEN:  # the wake's line, then the real call's in its stream
            events = [
                {"message": _report(init, 1.0), "logStreamName": f"{state}-1",
                 "timestamp": S1_END + 300 + int(init or 0)},
                {"message": _report(None if served else init),
                 "logStreamName": f"{state}-1" if served else f"{state}-2",
                 "timestamp": S1_END + 1000 * at},
            ]  # fmt: skip
        account.stubs["logs"].add_response(
            "filter_log_events", {"events": events},
            {"logGroupName": f"/logs/{state}", "startTime": ANY,
             "filterPattern": '"REPORT RequestId"'},
        )  # fmt: skip
    for stub in account.stubs.values():
        stub.activate()
    return account


@pytest.mark.parametrize(("status", "init", "outcome"), [
    (200, 300.0, "PASS"), (503, 300.0, "FAIL"), (200, None, "CANNOT TEST"),
])  # fmt: skip
def test_the_whole_check_on_a_stubbed_account(status, init, outcome):
    account = _account(status, init=init)
    result = doctor_cold.check(account, sleep=lambda s: None)
    assert result.outcome == outcome, result.detail
    for stub in account.stubs.values():
        stub.assert_no_pending_responses()


@pytest.mark.parametrize("served", [True, False])
def test_the_whole_check_says_whether_each_woken_step_was_served_by_its_wake(served):
    account = _account(200, served=served)
    result = doctor_cold.check(account, sleep=lambda s: None)
    assert result.outcome == "PASS", result.detail
    said = "served by the woken environment" if served else "the wake lost the race"
    for state in cold_model.WOKEN:
        line = next(x for x in result.detail.splitlines() if x.startswith(f"{state}: "))
        assert said in line
        # S1's REPORT at S1_END; the wake's at +300 + INIT 300 + 1 ms, so it started 299 ms
        # after S1 ended: printed beside the model's (its Choice and wake states at 20 ms
        # each, then the assumed 200 ms delivery).
        assert "the wake started 299 ms after S1" in line and "(model: 240 ms" in line
