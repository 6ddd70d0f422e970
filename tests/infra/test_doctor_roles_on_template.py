"""doctor's role check asked of the synthesized template instead of IAM's simulator.

A small offline stand-in for IAM's evaluation of identity policies (not IAM: Allow
statements, Action and Resource wildcards, and the condition operators the stack writes;
``ForAllValues`` holds on an absent key, as IAM documents:
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html)
evaluates every call ops/doctor/roles.py would simulate, with the same context keys, on the
step roles this stack deploys. It shows what doctor will say on a default deployment: every
call allowed except the Region-less model ARN of the global profile, whose grant needs
``bedrock:InferenceProfileArn``, a key no AWS page documents for that request: doctor
reports it as a FAIL unless its real message went through with these roles.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

import pytest

from infra import alarm_delivery
from ops.doctor.roles import Need, Place, needs_of
from steps.lib.runtime.settings import ENV_PREFIX, Settings
from steps.lib.runtime.stages import STAGES

pytestmark = pytest.mark.infra

ACCOUNT = alarm_delivery.PSEUDO["AWS::AccountId"]
REGION = alarm_delivery.PSEUDO["AWS::Region"]
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/ChatguardChat-Ledger-XYZ"
GUARDRAIL = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:guardrail/gr-abc123"
PLACE = Place("aws", REGION, ACCOUNT, TABLE, GUARDRAIL)


def render(value: Any, resources: Mapping[str, Any]) -> str | None:
    """A policy value with the template's tokens replaced as this account would deploy it
    (pseudo parameters and joins as the alarm-delivery walk renders them)."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        kind = resources.get(value["Fn::GetAtt"][0], {}).get("Type")
        return {"AWS::DynamoDB::Table": TABLE, "AWS::Bedrock::Guardrail": GUARDRAIL}.get(kind)
    return alarm_delivery._render(value)


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def condition_met(
    conditions: Mapping[str, Any], context: Mapping[str, tuple[str, ...]], res
) -> bool:
    for operator, block in conditions.items():
        for key, wanted in block.items():
            patterns = [render(w, res) for w in listed(wanted)]
            values = context.get(key)
            if operator == "ForAllValues:StringLike":
                ok = values is None or all(
                    any(fnmatch.fnmatchcase(v, p or "") for p in patterns) for v in values
                )
            elif operator in ("StringEquals", "StringLike"):
                test = (lambda v, p: v == p) if operator == "StringEquals" else fnmatch.fnmatchcase
                ok = values is not None and any(test(v, p or "") for v in values for p in patterns)
            else:
                raise AssertionError(f"the stand-in does not know {operator}")
            if not ok:
                return False
    return True


def allowed(statements: list[dict[str, Any]], need: Need, res: Mapping[str, Any]) -> bool:
    context = dict(need.context)
    for statement in statements:
        if statement["Effect"] != "Allow":
            continue
        actions = [a.lower() for a in listed(statement["Action"])]
        if not any(fnmatch.fnmatchcase(need.action.lower(), a) for a in actions):
            continue
        patterns = [render(r, res) for r in listed(statement["Resource"])]
        if not any(p and fnmatch.fnmatchcase(need.resource, p) for p in patterns):
            continue
        if condition_met(statement.get("Condition", {}), context, res):
            return True
    return False


def role_statements(template: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """{step: every statement of the policies attached to its role}."""
    resources = template["Resources"]
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for role in resource["Properties"]["Roles"]:
            step = next((s.state for s in STAGES if role["Ref"].startswith(f"{s.state}Role")), None)
            if step:
                found.setdefault(step, []).extend(
                    resource["Properties"]["PolicyDocument"]["Statement"]
                )
    return found


def deployed_settings(template: Mapping[str, Any]) -> dict[str, Settings]:
    steps = {}
    for logical, resource in template["Resources"].items():
        step = next((s.state for s in STAGES if logical.startswith(f"{s.state}Function")), None)
        if step and resource["Type"] == "AWS::Lambda::Function":
            env = resource["Properties"].get("Environment", {}).get("Variables", {})
            strings = {
                k: v for k, v in env.items() if k.startswith(ENV_PREFIX) and isinstance(v, str)
            }
            steps[step] = Settings.from_env(strings)
    return steps


def refused(template: Mapping[str, Any], needs: list[Need]) -> list[Need]:
    statements = role_statements(template)
    res = template["Resources"]
    return [n for n in needs if not allowed(statements.get(n.step, []), n, res)]


def test_every_call_doctor_asks_about_is_granted_but_the_region_less_model_arn(synth) -> None:
    template = synth.chat_json
    needs = needs_of(deployed_settings(template), PLACE)
    assert {n.step for n in needs} >= {"OriginVerify", "Quota", "CostGate", "Invoke", "Reconcile"}
    (left,) = refused(template, needs)
    assert left.resource.startswith("arn:aws:bedrock:::foundation-model/")
    assert left.context == () and not left.documented  # no key given: the message decides


def test_the_stand_in_refuses_what_the_roles_do_not_grant(synth) -> None:
    template = synth.chat_json
    wrong_keys = Need(
        "Quota", "dynamodb:UpdateItem", TABLE, (("dynamodb:LeadingKeys", ("GLOBAL",)),)
    )
    other_step = Need("OriginVerify", "dynamodb:UpdateItem", TABLE)
    regional = (
        f"arn:aws:bedrock:{REGION}::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    not_through_profile = Need("Invoke", "bedrock:InvokeModel", regional)
    assert refused(template, [wrong_keys, other_step, not_through_profile]) == [
        wrong_keys,
        other_step,
        not_through_profile,
    ]
