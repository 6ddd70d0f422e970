"""The wake on the synthesized template: the state machine carries it, its role may invoke
the three functions it wakes, and their asynchronous invocations are neither retried nor
kept (a late wake is worth nothing)."""

from __future__ import annotations

import json

import pytest

from steps.lib.runtime import wake

from .conftest import function_of

pytestmark = pytest.mark.infra

WOKEN = ("Retrieve", "Invoke", "Reconcile")


def _machine(synth) -> dict:
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    return machine


def _deployed_definition(synth) -> dict:
    body = _machine(synth)["Properties"]["DefinitionString"]
    text = body if isinstance(body, str) else "".join(
        p if isinstance(p, str) else '"arn"' for p in body["Fn::Join"][1]
    )  # fmt: skip
    definition: dict = json.loads(text)
    return definition


def test_the_deployed_workflow_wakes_the_three_later_steps_with_the_steps_own_payload(synth):
    states = _deployed_definition(synth)["States"]
    quiet, busy = states["OriginDecision"]["Choices"]
    # quiet by presence (no comparison a missing path would turn into a failed run), and
    # only beside an allowed decision (a refusal never reaches S2 through this rule).
    assert quiet["And"] == [
        {"Variable": "$.origin.decision", "StringEquals": "allowed"},
        {"Variable": "$.origin.quiet", "IsPresent": True},
    ]
    assert quiet["Next"] == "WakeLaterSteps" and busy["Next"] == "Quota"  # busy: straight on
    wake_state = states["WakeLaterSteps"]
    assert wake_state["Next"] == "Quota" and wake_state["Catch"][0]["Next"] == "Quota"
    invoked = {}
    for branch in wake_state["Branches"]:
        (task,) = [s for s in branch["States"].values() if s["Type"] == "Task"]
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert task["Parameters"]["Payload"] == wake.WAKE_PAYLOAD
        invoked[task["Parameters"]["FunctionName"]] = task
    assert len(invoked) == 3
    subs = _machine(synth)["Properties"]["DefinitionSubstitutions"]
    targets = {json.dumps(subs[f"{state}FunctionArn"]) for state in WOKEN}
    assert {json.dumps(subs[name[2:-1]]) for name in invoked} == targets


def _role_invokes(synth) -> set[str]:
    role = _machine(synth)["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    invoked: set[str] = set()
    for policy in synth.resources("AWS::IAM::Policy").values():
        if {"Ref": role} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            if "lambda:InvokeFunction" in (actions if isinstance(actions, list) else [actions]):
                resources = statement["Resource"]
                for r in resources if isinstance(resources, list) else [resources]:
                    invoked.add(json.dumps(r, sort_keys=True))
    return invoked


def test_the_workflow_role_may_invoke_each_woken_function(synth):
    invoked = _role_invokes(synth)
    for state in WOKEN:
        logical_id, _ = function_of(synth, state)
        assert json.dumps({"Fn::GetAtt": [logical_id, "Arn"]}, sort_keys=True) in invoked


def test_asynchronous_invocations_are_neither_retried_nor_kept(synth):
    configs = synth.resources("AWS::Lambda::EventInvokeConfig").values()
    by_function = {c["Properties"]["FunctionName"]["Ref"]: c["Properties"] for c in configs}
    for state in WOKEN:
        logical_id, _ = function_of(synth, state)
        props = by_function[logical_id]
        assert props["MaximumRetryAttempts"] == 0
        assert props["MaximumEventAgeInSeconds"] == 60
        assert props["Qualifier"] == "$LATEST"
