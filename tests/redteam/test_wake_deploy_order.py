"""Red team on the wake during a deploy (issue 29): can the new ASL's wake reach a step of the
previous version, which would take the wake for a message?

Within one stack update it cannot: the state machine names each woken function through
Fn::GetAtt in its DefinitionSubstitutions, an implicit dependency, and "Resource B is
updated before resource A" when A's properties refer to B (CloudFormation, "DependsOn
attribute", https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html).
So the functions carry `answers_wake` before the state machine that sends the wake exists.
A literal ARN in the substitutions would carry no such order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import function_of

pytestmark = pytest.mark.infra

WOKEN = ("Retrieve", "Invoke", "Reconcile")


def _refers_to(value: Any, logical_id: str) -> bool:
    """Whether a template value names the resource through Ref or Fn::GetAtt (any depth)."""
    text = json.dumps(value)
    return json.dumps({"Ref": logical_id}) in text or f'"Fn::GetAtt": ["{logical_id}"' in text


def test_the_woken_functions_are_updated_before_the_workflow_that_wakes_them(synth: Any) -> None:
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    substitutions = machine["Properties"]["DefinitionSubstitutions"]
    depends_on = machine.get("DependsOn", [])
    for state in WOKEN:
        logical_id, _ = function_of(synth, state)
        assert _refers_to(substitutions[f"{state}FunctionArn"], logical_id) or (
            logical_id in depends_on
        )


def test_naive_a_literal_arn_carries_no_order() -> None:
    literal = "arn:aws:lambda:eu-west-1:123456789012:function:chatguard-Retrieve"
    assert not _refers_to(literal, "RetrieveFunction")
