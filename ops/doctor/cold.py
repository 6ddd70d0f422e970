"""`chatguard doctor --cold`: one real message through the deployed workflow, every step cold.

The cold-path model (infra/cold_model.py, docs/benchmarks.md "Cold path") rests on figures
no AWS page gives; this measures the deployed stack's in their place:

1. Fresh execution environments, in a documented way: each step function's configuration is
   updated (one environment variable, ``CHATGUARD_COLD_CHECK``, set to this run's stamp);
   Lambda then serves invocations with the new configuration once ``LastUpdateStatus`` is
   ``Successful`` ([UpdateFunctionConfiguration]), which environments started with the old
   one cannot do. Every step's REPORT line must then carry an ``Init Duration``; one
   without it was not cold, and the check says it CANNOT TEST rather than pass.
2. One message through the workflow itself (StartSyncExecution, with the origin secret the
   stack keeps in SSM, as CloudFront's header would carry it), timed by Step Functions.
3. Each step's ``Init Duration`` and ``Duration`` from its log group's REPORT line
   ([Lambda function logs]), printed beside the model's INIT from source and with bytecode,
   and the whole message's time beside the model's cold message with and without the wake
   (Bedrock excluded there, included here). A cold message that is not answered (the run
   budget refusing it, or anything else) is a FAIL.
4. The wake: S1's environment is new, so the message is quiet and S4-S6 are invoked
   asynchronously first (statemachine/chat.asl.json). Each execution environment writes its
   own log stream ([Lambda function logs]), so for each of S4-S6 the REPORT lines say
   whether the real call ran on the woken environment (the wake's line, with an Init
   Duration, then the real call's in the same stream, without one) or on an environment of
   its own (the wake lost the race). The wake's invocation is the one that started first
   (REPORT time - Duration - Init Duration); from S1's end to that start is the measured
   delivery of the wake, printed in place of the model's assumed DELIVERY.

It spends what one message spends (a Converse call of the configured maxTokens at most) and
leaves the variable set (a later deploy removes it).

[UpdateFunctionConfiguration]: https://docs.aws.amazon.com/lambda/latest/api/API_UpdateFunctionConfiguration.html
[Lambda function logs]: https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra import cold_model

from .result import Check, cannot_test, failed, passed

NAME = "cold first message"
STAMP_VARIABLE = "CHATGUARD_COLD_CHECK"
QUESTION = "What does this site offer?"
_REPORT = re.compile(
    r"REPORT RequestId: (?P<request>\S+)\s+Duration: (?P<duration>[\d.]+) ms.*?"
    r"(?:Init Duration: (?P<init>[\d.]+) ms)?\s*$",
    re.S,
)


@dataclass(frozen=True, slots=True)
class Report:
    duration_ms: float
    init_ms: float | None  # None: the environment was warm


def parse_report(line: str) -> Report | None:
    match = _REPORT.search(line.strip())
    if match is None:
        return None
    init = match.group("init")
    return Report(float(match.group("duration")), float(init) if init else None)


def fresh_environments(
    lambda_client: Any,
    functions: Mapping[str, str],
    stamp: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int = 60,
) -> None:
    """Give every step function a new configuration and wait until each serves it."""
    for name in functions.values():
        config = lambda_client.get_function_configuration(FunctionName=name)
        variables = dict(config.get("Environment", {}).get("Variables", {}))
        variables[STAMP_VARIABLE] = stamp
        lambda_client.update_function_configuration(
            FunctionName=name, Environment={"Variables": variables}
        )
    for name in functions.values():
        for _ in range(attempts):
            status = lambda_client.get_function_configuration(FunctionName=name)
            if status.get("LastUpdateStatus") == "Successful":
                break
            if status.get("LastUpdateStatus") == "Failed":
                raise RuntimeError(f"{name}: {status.get('LastUpdateStatusReason', 'failed')}")
            sleep(2)
        else:
            raise RuntimeError(f"{name} still updating after {attempts * 2} s")


@dataclass(frozen=True, slots=True)
class Logged:
    """A REPORT line with where and when it was written."""

    stream: str  # one per execution environment
    at_ms: int  # the log event's timestamp: the invocation's end
    report: Report

    @property
    def started_ms(self) -> float:
        """When the invocation's environment began work on it (its INIT, when cold)."""
        return self.at_ms - self.report.duration_ms - (self.report.init_ms or 0.0)


def reports(
    logs: Any,
    groups: Mapping[str, str],
    since_ms: int,
    *,
    want: Mapping[str, int] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int = 30,
) -> dict[str, list[Logged]]:
    """Each step's REPORT lines since ``since_ms``, oldest first, polled until each step has
    ``want`` of them (one by default; log delivery lags) or the attempts run out."""
    found: dict[str, list[Logged]] = {}
    wanted = {state: (want or {}).get(state, 1) for state in groups}
    for _ in range(attempts):
        for state, group in groups.items():
            if len(found.get(state, ())) >= wanted[state]:
                continue
            page = logs.filter_log_events(
                logGroupName=group, startTime=since_ms, filterPattern='"REPORT RequestId"'
            )
            lines = []
            for event in page.get("events", []):
                report = parse_report(event.get("message", ""))
                if report is not None:
                    at = int(event.get("timestamp", 0))
                    lines.append(Logged(str(event.get("logStreamName", "")), at, report))
            found[state] = sorted(lines, key=lambda logged: logged.at_ms)
        if all(len(found.get(s, ())) >= n for s, n in wanted.items()):
            break
        sleep(5)
    return {state: lines for state, lines in found.items() if lines}


@dataclass(frozen=True, slots=True)
class Wake:
    """What the REPORT lines of one woken step say about the wake."""

    real: Report  # the real call's line, Init Duration set to its environment's INIT
    served: bool  # the real call ran on the environment the wake started
    gap_ms: float | None  # from S1's end to the wake's start: the measured delivery


def wake_of(lines: list[Logged], s1_end_ms: int | None) -> Wake | None:
    """None when the step logged one invocation only (no wake reached it)."""
    if len(lines) < 2:
        return None
    ordered = sorted(lines, key=lambda logged: logged.started_ms)
    wake, real = ordered[0], ordered[-1]
    served = real.stream == wake.stream and real.report.init_ms is None
    init = wake.report.init_ms if served else real.report.init_ms
    gap = None if s1_end_ms is None else wake.started_ms - s1_end_ms
    return Wake(Report(real.report.duration_ms, init), served, gap)


def wake_lines(wakes: Mapping[str, Wake | None]) -> list[str]:
    # The model's time from S1's end to the wake's start: the states entered after S1 up to
    # and including the wake, then the assumed delivery.
    after_s1 = cold_model.states_entered("WakeLaterSteps") - cold_model.states_entered(
        "OriginVerify"
    )
    assumed = (cold_model.WAKE_DELIVERY_S + after_s1 * cold_model.TRANSITION_S) * 1000
    lines = []
    for state in cold_model.WOKEN:
        wake = wakes.get(state)
        if wake is None:
            lines.append(f"{state}: no wake reached it (one invocation logged)")
            continue
        where = (
            "served by the woken environment (its INIT off the path)"
            if wake.served
            else "the wake lost the race: the real call started an environment of its own"
        )
        gap = "" if wake.gap_ms is None else f"; the wake started {wake.gap_ms:.0f} ms after S1"
        lines.append(f"{state}: {where}{gap} (model: {assumed:.0f} ms, DELIVERY assumed)")
    return lines


def send_one(stepfunctions: Any, machine_arn: str, origin_secret: str) -> dict[str, Any]:
    """One message as API Gateway's mapping template hands it to the workflow."""
    payload = {
        "requestId": f"cold-check-{uuid.uuid4().hex[:12]}",
        "originVerify": origin_secret,
        "viewerAddress": "192.0.2.44:443",  # documentation range: a visitor of its own
        "body": {"message": QUESTION},
    }
    answer: dict[str, Any] = stepfunctions.start_sync_execution(
        stateMachineArn=machine_arn, input=json.dumps(payload)
    )
    return answer


def verdict(
    answer: Mapping[str, Any],
    found: Mapping[str, Report],
    memory: Mapping[str, int],
    wakes: Mapping[str, Wake | None] | None = None,
) -> Check:
    """FAIL when the cold message was not answered; CANNOT TEST when a step was not cold
    (for a woken step: when the environment that served it gave no Init Duration)."""
    seconds = (answer["stopDate"] - answer["startDate"]).total_seconds()
    output = json.loads(answer.get("output") or "{}")
    status = output.get("statusCode") if isinstance(output, dict) else None
    lines = [f"{'step':<13}{'Init ms':>9}{'model src':>11}{'model pyc':>11}{'Duration ms':>13}"]
    for state in cold_model.ANSWERED:
        report = found.get(state)
        src = cold_model.init_seconds(state, "source", memory[state]) * 1000
        pyc = cold_model.init_seconds(state, "bytecode", memory[state]) * 1000
        init = "-" if report is None or report.init_ms is None else f"{report.init_ms:.0f}"
        duration = "-" if report is None else f"{report.duration_ms:.0f}"
        lines.append(f"{state:<13}{init:>9}{src:>11.0f}{pyc:>11.0f}{duration:>13}")
    model = cold_model.message_seconds("source", memory, woken=False)
    woken = cold_model.message_seconds("source", memory, woken=True)
    lines.append(
        f"whole message {seconds:.2f} s (model, Bedrock excluded, from source: {woken:.2f} s "
        f"with the wake, {model:.2f} s every step cold)"
    )
    if wakes is not None:
        lines += wake_lines(wakes)
    detail = "\n".join(lines)
    if answer.get("status") != "SUCCEEDED" or status != 200:
        return failed(
            NAME,
            f"the cold message was not answered (run {answer.get('status')}, HTTP {status})\n"
            + detail,
            "see the Invoke step's log line: NotSent by the run budget means the cold path "
            "is slower than the model (docs/benchmarks.md, Cold path)",
        )
    warm = [s for s in cold_model.ANSWERED if found.get(s) is None or found[s].init_ms is None]
    if warm:
        return cannot_test(
            NAME,
            f"{', '.join(warm)} gave no Init Duration (not cold, or no REPORT line yet)\n" + detail,
            "run it again after a few minutes; nothing else may call the stack meanwhile",
        )
    return passed(NAME, "answered with every step cold\n" + detail)


@dataclass(frozen=True, slots=True)
class Stack:
    """What the cold check needs of the deployed stack."""

    functions: dict[str, str]  # step -> function name
    log_groups: dict[str, str]  # step -> its log group
    memory: dict[str, int]  # step -> MemorySize, as deployed
    machine_arn: str
    origin_secret_param: str


def discover(cloudformation: Any, lambda_client: Any, stack: str) -> Stack:
    from .deployed import physical_ids, stack_resources, step_of

    resources = stack_resources(cloudformation, stack)
    functions: dict[str, str] = {}
    for resource in resources:
        state = step_of(resource.get("LogicalResourceId", ""))
        if resource.get("ResourceType") == "AWS::Lambda::Function" and state:
            functions[state] = resource["PhysicalResourceId"]
    log_groups, memory, secret_param = {}, {}, ""
    for state, name in functions.items():
        config = lambda_client.get_function_configuration(FunctionName=name)
        log_groups[state] = config.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{name}"
        memory[state] = int(config["MemorySize"])
        if state == "OriginVerify":
            variables = config.get("Environment", {}).get("Variables", {})
            secret_param = variables.get("CHATGUARD_ORIGIN_SECRET_PARAM", "")
    (machine,) = physical_ids(resources, "AWS::StepFunctions::StateMachine")
    return Stack(functions, log_groups, memory, machine, secret_param or "/chatguard/origin-secret")


def check(aws: Any, *, sleep: Callable[[float], None] = time.sleep) -> Check:
    """The whole check against the deployed stack, with the operator's credentials."""
    stack = discover(aws.client("cloudformation"), aws.client("lambda"), aws.stack)
    answered = {s: stack.functions[s] for s in cold_model.ANSWERED}
    parameter = aws.client("ssm").get_parameter(Name=stack.origin_secret_param, WithDecryption=True)
    secret = json.loads(parameter["Parameter"]["Value"])["current"]
    fresh_environments(aws.client("lambda"), answered, uuid.uuid4().hex[:12], sleep=sleep)
    since = int(time.time() * 1000)
    answer = send_one(aws.client("stepfunctions"), stack.machine_arn, secret)
    groups = {s: stack.log_groups[s] for s in cold_model.ANSWERED}
    want = dict.fromkeys(cold_model.WOKEN, 2)  # the wake's invocation and the real call
    logged = reports(aws.client("logs"), groups, since, want=want, sleep=sleep)
    s1 = logged.get("OriginVerify")
    s1_end = s1[0].at_ms if s1 else None
    wakes = {s: wake_of(logged.get(s, []), s1_end) for s in cold_model.WOKEN}
    found = {s: lines[0].report for s, lines in logged.items()}
    for state, wake in wakes.items():
        if wake is not None:
            found[state] = wake.real
    return verdict(answer, found, stack.memory, wakes)


def command(aws: Any) -> int:
    from .command import exit_code, guarded, render_one

    result = guarded(NAME, lambda: check(aws))
    print(render_one(result))
    return exit_code([result])


NOTICE = (
    "doctor --cold gives every step a new configuration (one environment variable), so the\n"
    "next message meets fresh environments, then sends one real message through the\n"
    "workflow: what one visitor's message costs (one Converse call at most)."
)


def cli(args: Any) -> int:
    from ..aws import Aws, ops_context

    region = args.region or ops_context().get("chat_region") or None
    print(NOTICE, flush=True)
    return command(Aws(args.profile, region, args.stack))
