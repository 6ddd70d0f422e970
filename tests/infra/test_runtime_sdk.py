"""Which steps import the Lambda runtime's botocore, and the synth-time refusal."""

from __future__ import annotations

import pytest

from infra import bundling, runtime_sdk
from steps.lib.runtime.stages import BY_STATE, STAGES

from .conftest import function_of

# The IAM action each operation needs (Converse is authorised as bedrock:InvokeModel; a
# transaction's items by their item-level actions).
IAM_FOR = {
    "dynamodb.UpdateItem": {"dynamodb:UpdateItem"},
    "dynamodb.GetItem": {"dynamodb:GetItem"},
    "dynamodb.TransactWriteItems": {
        "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem",
    },
    "ssm.GetParameter": {"ssm:GetParameter"},
    "bedrock-runtime.InvokeModel": {"bedrock:InvokeModel"},
    "bedrock-runtime.Converse": {"bedrock:InvokeModel"},
    "bedrock-runtime.ApplyGuardrail": {"bedrock:ApplyGuardrail"},
    "bedrock-runtime.CountTokens": {"bedrock:CountTokens"},
}  # fmt: skip


def test_only_invoke_needs_a_botocore_newer_than_the_runtimes():
    bundled = {s.state for s in STAGES if runtime_sdk.bundles_botocore(s.state)}
    assert bundled == {"Invoke"}
    assert runtime_sdk.too_new(runtime_sdk.OPERATIONS["Invoke"], (1, 35, 0)) == [
        "bedrock-runtime.CountTokens"
    ]
    # With a runtime botocore that has CountTokens, no step would need its own.
    assert not any(runtime_sdk.bundles_botocore(s.state, (1, 40, 0)) for s in STAGES)


def test_a_step_left_to_the_runtime_sdk_with_a_newer_operation_is_refused(monkeypatch):
    with pytest.raises(runtime_sdk.RuntimeSdkTooOld, match=r"Invoke calls bedrock-runtime\.Count"):
        runtime_sdk.check("Invoke", ships_botocore=False)
    runtime_sdk.check("Invoke", ships_botocore=True)
    # A new call in a gate step, newer than the floor: its asset would lack it, so synthesis
    # gives it the asset with botocore instead of shipping a step that fails at run time.
    monkeypatch.setitem(runtime_sdk.OPERATIONS, "Quota", ("bedrock-runtime.CountTokens",))
    assert bundling.step_asset(BY_STATE["Quota"], "titan") is bundling.INVOKE_ASSET
    monkeypatch.setitem(runtime_sdk.OPERATIONS, "Retrieve", ("bedrock-runtime.CountTokens",))
    with pytest.raises(runtime_sdk.RuntimeSdkTooOld, match="Retrieve"):
        bundling.step_asset(BY_STATE["Retrieve"], "titan")
    # An operation the table does not know counts as too new.
    assert runtime_sdk.too_new(["s3.PutObject"], (9, 0, 0)) == ["s3.PutObject"]


@pytest.mark.infra
def test_every_iam_action_a_step_holds_is_covered_by_its_listed_operations(synth):
    chat = synth.chat_json["Resources"]
    for stage in STAGES:
        role = function_of(synth, stage.state)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
        held: set[str] = set()
        for resource in chat.values():
            props = resource.get("Properties", {})
            if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in props["Roles"]:
                continue
            for statement in props["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                held |= {actions} if isinstance(actions, str) else set(actions)
        listed = set().union(*(IAM_FOR[op] for op in runtime_sdk.OPERATIONS[stage.state]))
        aws_calls = {a for a in held if not a.startswith(("xray:", "logs:", "kms:"))}
        assert aws_calls <= listed, f"{stage.state} holds {aws_calls - listed}, not listed"
