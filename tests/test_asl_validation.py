"""chat.asl.json is checked by two real Amazon States Language validators (moto's ASL
parser with its Express-workflow analyser, and cfn-lint's state machine schema), plus a
graph check that neither does: every transition lands on a state and every state is
reached. Each check is shown rejecting a broken variant, so none of them can pass blindly.
"""

from __future__ import annotations

import copy
import json

import pytest
from cfnlint.api import ManualArgs, lint
from moto.stepfunctions.parser.asl.static_analyser.express_static_analyser import (
    ExpressStaticAnalyser,
)

from statemachine import loader
from steps.lib.runtime.stages import STAGES

SUBSTITUTIONS = {
    stage.placeholder: f"arn:aws:lambda:us-east-1:123456789012:function:{stage.state}"
    for stage in STAGES
}


@pytest.fixture(scope="module")
def definition() -> dict:
    return loader.definition(SUBSTITUTIONS)


def moto_errors(definition: dict) -> list[str]:
    try:
        ExpressStaticAnalyser().analyse(json.dumps(definition))
    except Exception as exc:  # the analyser raises parser and value errors alike
        return [f"{type(exc).__name__}: {exc}"]
    return []


def cfn_lint_errors(definition: dict) -> list[str]:
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Chat": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": "arn:aws:iam::123456789012:role/probe",
                    "StateMachineType": "EXPRESS",
                    "Definition": definition,
                },
            }
        },
    }
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id}: {m.message}" for m in matches if m.rule.id.startswith("E")]


def graph_errors(definition: dict) -> list[str]:
    states = definition["States"]
    problems = []
    edges: dict[str, set[str]] = {}
    for name, state in states.items():
        targets = {state[k] for k in ("Next", "Default") if k in state}
        targets |= {c["Next"] for c in state.get("Choices", []) + state.get("Catch", [])}
        edges[name] = targets
        problems += [f"{name} -> missing state {t}" for t in sorted(targets - states.keys())]
        terminal = state.get("End") or state["Type"] in ("Succeed", "Fail", "Choice")
        if not terminal and "Next" not in state:
            problems.append(f"{name} neither ends nor moves on")
    seen, todo = set(), [definition["StartAt"]]
    while todo:
        name = todo.pop()
        if name in seen or name not in states:
            continue
        seen.add(name)
        todo += edges[name]
    problems += [f"{name} is unreachable" for name in sorted(states.keys() - seen)]
    return problems


@pytest.mark.parametrize("check", [moto_errors, cfn_lint_errors, graph_errors])
def test_the_real_definition_is_valid(definition, check):
    assert check(definition) == []


def _broken(definition: dict, mutate) -> dict:
    copy_ = copy.deepcopy(definition)
    mutate(copy_["States"])
    return copy_


def test_moto_rejects_a_wait_for_task_token_in_an_express_workflow(definition):
    def mutate(states):
        states["Invoke"]["Resource"] = "arn:aws:states:::lambda:invoke.waitForTaskToken"

    assert moto_errors(_broken(definition, mutate))


def test_cfn_lint_rejects_a_state_that_neither_ends_nor_moves_on(definition):
    assert cfn_lint_errors(_broken(definition, lambda s: s["Answer"].pop("End")))


def test_the_graph_check_rejects_a_dangling_or_unreachable_state(definition):
    def dangling(states):
        states["OriginDecision"]["Default"] = "Nowhere"

    def orphan(states):
        states["Orphan"] = {"Type": "Pass", "End": True}

    # Re-pointing the default also strands the state it used to lead to.
    assert graph_errors(_broken(definition, dangling)) == [
        "OriginDecision -> missing state Nowhere",
        "OriginRefused is unreachable",
    ]
    assert graph_errors(_broken(definition, orphan)) == ["Orphan is unreachable"]
