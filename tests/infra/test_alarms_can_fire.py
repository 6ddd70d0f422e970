"""Every alarm in both synthesized templates watches a metric that is emitted for what the
alarm claims: the name, namespace and dimensions the code (or AWS) really emits, and a
path that produces it. An alarm that cannot fire is worse than none: it reads as "fine".

- Chatguard (EMF): namespace and dimensions as the steps' Powertools backend prints them,
  and a metric name some step's invocation produces (steps/lib/runtime/observability.py).
- AWS/WAFV2: the Rule dimension names a rule of the web ACL whose action produces that
  metric (BlockedRequests for Block, CountedRequests for Count), in the web ACL's metric
  name (https://docs.aws.amazon.com/waf/latest/developerguide/waf-metrics.html).
- AWS/States: ExecutionsTimedOut needs a TimeoutSeconds; ExecutionsFailed needs a state
  whose error is not caught (a Fail state, or a Task without a States.ALL catcher)
  (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html).
- AWS/Lambda and AWS/ApiGateway: the dimension is a function or API of the same template.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest

from steps.lib.runtime.observability import METRICS, metrics_for
from steps.lib.runtime.stages import STAGES

pytestmark = pytest.mark.infra

WAF_METRIC_FOR_ACTION = {"Block": "BlockedRequests", "Count": "CountedRequests"}


def emitted_emf(capsys: pytest.CaptureFixture[str], name: str) -> tuple[str, dict[str, str]]:
    """What the steps' backend prints on Lambda for one metric: namespace and dimensions."""
    from steps.lib.runtime.telemetry import Backend

    backend = Backend.__new__(Backend)  # only the metrics part: no logger, no X-Ray
    backend.metrics = Backend._metrics()
    capsys.readouterr()
    backend._flush({name: 1})
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    (dimension_names,) = directive["Dimensions"]
    assert [m["Name"] for m in directive["Metrics"]] == [name]
    return directive["Namespace"], {d: line[d] for d in dimension_names}


def produced_by_some_step() -> set[str]:
    """Every metric name an invocation of some step can emit."""
    produced: set[str] = set()
    decisions = ["allowed", "forbidden", "limited", "off", "blocked", "settled", "released", "x"]
    fields = ({}, {"cost_micros": 1, "count_failed": True})
    for stage in STAGES:
        for decision in decisions:
            for extra in fields:
                produced |= set(metrics_for(stage.state, decision, extra, None))
        for error in ("RuntimeError", "NotSent"):
            produced |= set(metrics_for(stage.state, None, {}, error))
    return produced


def definition(template: Mapping[str, Any]) -> dict[str, Any]:
    (machine,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    text = machine["DefinitionString"]
    if isinstance(text, dict):  # Fn::Join of the text and the functions' ARNs
        text = "".join(p if isinstance(p, str) else "arn" for p in text["Fn::Join"][1])
    return dict(json.loads(text))


def uncaught_failure(states: Mapping[str, Any]) -> bool:
    for state in states.values():
        if state["Type"] == "Fail":
            return True
        catches = [e for c in state.get("Catch", []) for e in c["ErrorEquals"]]
        if state["Type"] in ("Task", "Parallel", "Map") and "States.ALL" not in catches:
            return True
    return False


def why_silent(
    alarm: Mapping[str, Any], template: Mapping[str, Any], emf: tuple[str, dict[str, str]]
) -> str | None:
    """None when the alarm's metric can be emitted for what it claims, else why not."""
    namespace, name = alarm.get("Namespace"), alarm["MetricName"]
    dims = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}
    resources = template["Resources"]
    if namespace == emf[0]:
        if dims != emf[1]:
            return f"{name}: dimensions {dims}, the steps emit {emf[1]}"
        return None if name in produced_by_some_step() else f"{name}: no step emits it"
    if namespace == "AWS/WAFV2":
        (acl,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::WAFv2::WebACL"]
        if dims.get("WebACL") != acl["VisibilityConfig"]["MetricName"]:
            return f"{name}: WebACL {dims.get('WebACL')} is not this web ACL"
        rules = {r["VisibilityConfig"]["MetricName"]: r for r in acl["Rules"]}
        rule = rules.get(dims.get("Rule", ""))
        if rule is None:
            return f"{name}: no rule {dims.get('Rule')}"
        action = next(iter(rule.get("Action") or rule.get("OverrideAction") or {}), None)
        if WAF_METRIC_FOR_ACTION.get(action or "") != name:
            return f"{name}: rule {rule['Name']}'s action is {action}"
        return None
    if namespace == "AWS/States":
        asl = definition(template)
        if name == "ExecutionsTimedOut":
            return None if asl.get("TimeoutSeconds") else f"{name}: no TimeoutSeconds"
        if name == "ExecutionsFailed":
            ok = uncaught_failure(asl["States"])
            return None if ok else f"{name}: every Task catches States.ALL"
        return f"{name}: no claim about it is checked"
    if namespace == "AWS/Lambda":
        ref = (dims.get("FunctionName") or {}).get("Ref")  # type: ignore[union-attr]
        kind = resources.get(ref, {}).get("Type")
        return None if kind == "AWS::Lambda::Function" else f"{name}: not a function here"
    if namespace == "AWS/ApiGateway":
        ref = dims.get("ApiName") or {}
        names = {
            r["Properties"].get("Name")
            for r in resources.values()
            if r["Type"] == "AWS::ApiGateway::RestApi"
        }
        return None if ref in names else f"{name}: no API {ref}"
    return f"{namespace}/{name}: an unknown namespace"


def alarms(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    assert found
    return found


@pytest.fixture
def emf(capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, str]]:
    return emitted_emf(capsys, "FailClosed")


def test_the_steps_emit_every_metric_they_declare(capsys) -> None:
    assert produced_by_some_step() == set(METRICS)
    for name in METRICS:
        assert emitted_emf(capsys, name) == ("Chatguard", {"service": "chatguard"})


@pytest.mark.parametrize("stack", ["chat", "edge"])
def test_every_alarm_can_fire_for_what_it_claims(synth, emf, stack) -> None:
    template = synth.chat_json if stack == "chat" else synth.edge_json
    silent = [why for a in alarms(template) if (why := why_silent(a, template, emf))]
    assert silent == []


def test_the_outcomes_that_matter_are_alarmed(synth) -> None:
    chat = {(a.get("Namespace"), a["MetricName"]) for a in alarms(synth.chat_json)}
    # Fail-closed replies (gate steps), a model call whose reservation stands, a run that
    # timed out, and a step that timed out or was throttled (Lambda's own metrics).
    for outcome in ("FailClosed", "ReservationOpen"):
        assert ("Chatguard", outcome) in chat
    assert ("AWS/States", "ExecutionsTimedOut") in chat
    assert {("AWS/Lambda", "Errors"), ("AWS/Lambda", "Throttles")} <= chat


def test_alarms_that_cannot_fire_are_caught(synth, emf) -> None:
    chat, edge = copy.deepcopy(synth.chat_json), copy.deepcopy(synth.edge_json)
    (timed_out,) = [a for a in alarms(chat) if a["MetricName"] == "ExecutionsTimedOut"]
    failed = {**timed_out, "MetricName": "ExecutionsFailed"}  # the alarm removed here
    assert why_silent(failed, chat, emf) == "ExecutionsFailed: every Task catches States.ALL"
    (fail_closed,) = [a for a in alarms(chat) if a["MetricName"] == "FailClosed"]
    typo = {**fail_closed, "MetricName": "FailedClosed"}
    assert why_silent(typo, chat, emf) == "FailedClosed: no step emits it"
    other_dims = {**fail_closed, "Dimensions": [{"Name": "service", "Value": "chat"}]}
    assert "dimensions" in (why_silent(other_dims, chat, emf) or "")
    (rate,) = alarms(edge)
    blocked = {**rate, "MetricName": "BlockedRequests"}  # the rate rule only counts now
    assert why_silent(blocked, edge, emf) == "BlockedRequests: rule ChatRateLimit's action is Count"


def test_the_readmes_idle_cost_counts_these_alarms(synth) -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"CloudWatch alarms \((\d+) standard alarms\)", readme)
    assert found is not None
    assert int(found.group(1)) == len(alarms(synth.chat_json)) + len(alarms(synth.edge_json))
