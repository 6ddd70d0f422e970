"""Each step's role allows what its step needs and nothing of another step's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Stack

from infra import permissions as allow
from steps.lib.money.ledger_items import shard_pks
from steps.lib.providers.catalogue import lookup
from steps.lib.runtime.settings import MAX_SHARDS, Settings
from tests.infra.conftest import function_of

# Every day/month total item a reservation or settlement may touch (chat_stack.py says why).
TOTALS = set(shard_pks(MAX_SHARDS))

pytestmark = pytest.mark.infra

OBSERVABILITY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords",
                 "logs:CreateLogStream", "logs:PutLogEvents"}  # fmt: skip


def statements_of(synth, state: str) -> list[dict[str, Any]]:
    _, fn = function_of(synth, state)
    role_id = fn["Properties"]["Role"]["Fn::GetAtt"][0]
    found = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    role = synth.chat_json["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in role, f"{state} must not use managed policies"
    for inline in role.get("Policies", []):
        found += inline["PolicyDocument"]["Statement"]
    return found


def actions(statements) -> set[str]:
    result: set[str] = set()
    for s in statements:
        result.update([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    return result


def leading_keys(statements, action: str) -> set[str]:
    keys: set[str] = set()
    for s in statements:
        if action in actions([s]):
            condition = s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            keys.update(condition)
    return keys


def mentions(statements, text: str) -> bool:
    return text in json.dumps(statements)


def problems(statements, *, allowed: set[str]) -> list[str]:
    """Wildcard actions, actions outside ``allowed``, and DynamoDB without item scoping."""
    found = []
    for s in statements:
        assert s["Effect"] == "Allow"
        for action in actions([s]):
            if "*" in action:
                found.append(f"wildcard action {action}")
            elif action not in allowed | OBSERVABILITY:
                found.append(f"unexpected action {action}")
            if action.startswith("dynamodb:") and "dynamodb:LeadingKeys" not in json.dumps(s):
                found.append(f"{action} without LeadingKeys")
    return found


def test_the_checker_catches_an_over_broad_policy():
    naive = [{"Effect": "Allow", "Action": ["dynamodb:*"], "Resource": "*"},
             {"Effect": "Allow", "Action": "dynamodb:UpdateItem", "Resource": "x"}]  # fmt: skip
    assert problems(naive, allowed={"dynamodb:UpdateItem"}) == [
        "wildcard action dynamodb:*",
        "dynamodb:* without LeadingKeys",
        "dynamodb:UpdateItem without LeadingKeys",
    ]


def test_origin_verify_reads_only_the_origin_secret(synth):
    s = statements_of(synth, "OriginVerify")
    assert problems(s, allowed={"ssm:GetParameter"}) == []
    assert mentions(s, "parameter/chatguard/origin-secret")
    assert not mentions(s, "visitor-salt") and not mentions(s, "signing-key")


def test_quota_only_counts_visitor_items_and_cannot_call_bedrock_or_read_the_origin_secret(synth):
    s = statements_of(synth, "Quota")
    assert problems(s, allowed={"dynamodb:UpdateItem", "ssm:GetParameter"}) == []
    assert leading_keys(s, "dynamodb:UpdateItem") == {"VISITOR#*"}
    assert not any(a.startswith("bedrock:") for a in actions(s))
    assert not mentions(s, "origin-secret") and not mentions(s, "signing-key")
    assert mentions(s, "parameter/chatguard/visitor-salt")


def test_cost_gate_only_touches_the_reservation_transaction_items(synth):
    s = statements_of(synth, "CostGate")
    allowed = {"dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem",
               "dynamodb:GetItem"}  # fmt: skip
    assert problems(s, allowed=allowed) == []
    assert leading_keys(s, "dynamodb:UpdateItem") == {*TOTALS, "VISITOR#*"}
    assert leading_keys(s, "dynamodb:PutItem") == {"RES#*"}
    assert leading_keys(s, "dynamodb:ConditionCheckItem") == {*TOTALS, "CONFIG"}
    assert not mentions(s, "ssm:") and not mentions(s, "bedrock:")


def rendered(statements) -> list[dict[str, Any]]:
    """PolicyStatements as IAM JSON, outside any stack (tokens stay as placeholders)."""
    stack = Stack()
    return [stack.resolve(x.to_statement_json()) for x in statements]


def test_count_tokens_is_granted_only_to_a_model_that_counts():
    # CountTokens refuses inference-profile ids: it is allowed on the bare model, in this
    # Region, and on nothing else.
    profile = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    assert lookup(profile).counts_tokens  # type: ignore[union-attr]
    (count,) = rendered(allow.count_tokens(Settings(model_id=profile)))
    assert count["Action"] == "bedrock:CountTokens" and "Condition" not in count
    assert mentions([count], "foundation-model/anthropic.claude-sonnet-4-20250514-v1:0")
    assert not mentions([count], "inference-profile") and not mentions([count], ":*::")
    haiku = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert allow.count_tokens(Settings(model_id=haiku)) == []


def test_a_local_embedder_leaves_retrieve_without_any_bedrock_grant():
    (titan,) = rendered(allow.embed(Settings(model_backend="bedrock", embedder="titan")))
    assert titan["Action"] == "bedrock:InvokeModel" and mentions([titan], "titan")
    assert allow.embed(Settings(model_backend="bedrock", embedder="local")) == []


def test_retrieve_may_only_embed_with_the_embedding_model(synth):
    s = statements_of(synth, "Retrieve")
    assert problems(s, allowed={"bedrock:InvokeModel"}) == []
    model = synth.context["chatguard"]["embedding_model_id"]
    bedrock = [x for x in s if x["Action"] == "bedrock:InvokeModel"]
    assert len(bedrock) == 1 and mentions(bedrock, f"foundation-model/{model}")
    assert not mentions(s, "anthropic")


def test_invoke_may_only_converse_with_the_model_and_apply_the_guardrail(synth):
    s = statements_of(synth, "Invoke")
    allowed = {
        "bedrock:InvokeModel",
        "bedrock:CountTokens",
        "bedrock:ApplyGuardrail",
        "ssm:GetParameter",
    }
    assert problems(s, allowed=allowed) == []
    model_id = synth.context["chatguard"]["model_id"]
    # The default model meters by bytes (the catalogue: no CountTokens for Haiku 4.5), so S5
    # never counts and its role may not either.
    assert not lookup(model_id).counts_tokens  # type: ignore[union-attr]
    assert "bedrock:CountTokens" not in actions(s)
    invoke = [x for x in s if x["Action"] == "bedrock:InvokeModel"]
    assert mentions(invoke, f"inference-profile/{model_id}")
    routed = [x for x in invoke if "Condition" in x]
    assert routed and all(
        "bedrock:InferenceProfileArn" in json.dumps(x["Condition"]) for x in routed
    )
    assert not mentions(invoke, "titan")
    (guard,) = [x for x in s if x["Action"] == "bedrock:ApplyGuardrail"]
    (guardrail_id,) = synth.resources("AWS::Bedrock::Guardrail")
    assert guard["Resource"] == {"Fn::GetAtt": [guardrail_id, "GuardrailArn"]}
    assert mentions(s, "signing-key") and not mentions(s, "origin-secret")
    assert not any(a.startswith("dynamodb:") for a in actions(s))


def test_reconcile_only_settles_reservations_and_totals(synth):
    s = statements_of(synth, "Reconcile")
    allowed = {"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem"}
    assert problems(s, allowed=allowed) == []
    assert leading_keys(s, "dynamodb:UpdateItem") == {"RES#*", *TOTALS, "VISITOR#*"}
    assert leading_keys(s, "dynamodb:GetItem") == {"RES#*"}
    # A cut S3's request id voided (ledger.release_by_request): reservation items only.
    assert leading_keys(s, "dynamodb:PutItem") == {"RES#*"}
    assert not mentions(s, "bedrock:") and not mentions(s, "ssm:")


def test_the_totals_scope_is_every_shard_that_can_exist_and_nothing_else():
    # A month keeps the shard count its first reservation recorded, so a deploy that lowers
    # ceiling_shards mid-month must still reach the higher shards (else 503 until the month
    # ends); the scope stays the total items' own keys.
    from steps.lib.money.ledger_items import day_key

    every_shard = {"GLOBAL", *(f"GLOBAL#{k}" for k in range(1, MAX_SHARDS))}
    assert every_shard == TOTALS
    assert shard_pks(1) == ["GLOBAL"]
    assert shard_pks(3) == ["GLOBAL", "GLOBAL#1", "GLOBAL#2"]
    assert [day_key("2026-11-30", k)["pk"]["S"] for k in range(3)] == shard_pks(3)


def test_degraded_makes_no_aws_call_at_all(synth):
    s = statements_of(synth, "Degraded")
    assert actions(s) <= OBSERVABILITY


def test_api_role_can_only_start_the_chat_workflow(synth):
    (machine_id,) = synth.resources("AWS::StepFunctions::StateMachine")
    found = [
        st
        for p in synth.resources("AWS::IAM::Policy").values()
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if "states:StartSyncExecution" in actions([st])
    ]
    assert found == [
        {"Action": "states:StartSyncExecution", "Effect": "Allow", "Resource": {"Ref": machine_id}}
    ]
