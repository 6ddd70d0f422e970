"""`chatguard doctor` reads the deployed stack by shape: step functions by logical id, the
settings in their environment, outputs by name, the web ACL's rules. These tests hold
those readings to the synthesized templates, so a rename in infra/ cannot leave doctor
looking for something the stack no longer has."""

from __future__ import annotations

import pytest

from ops.aws import find_output
from ops.doctor.deployed import step_of
from ops.doctor.waf import non_json_blocks
from steps.lib.runtime.stages import STAGES

pytestmark = pytest.mark.infra


def test_every_step_function_and_only_those_are_found_by_logical_id(synth):
    functions = synth.resources("AWS::Lambda::Function")
    found = {step_of(logical): logical for logical in functions if step_of(logical)}
    assert sorted(found) == sorted(stage.state for stage in STAGES)
    for state, logical in found.items():
        description = functions[logical]["Properties"]["Description"]
        assert description.endswith(f" {state}")


def test_the_settings_doctor_reads_are_in_the_steps_environment(synth):
    functions = synth.resources("AWS::Lambda::Function")
    env = {
        step_of(k): v["Properties"]["Environment"]["Variables"]
        for k, v in functions.items()
        if step_of(k)
    }
    for name in ("MODEL_ID", "MODEL_BACKEND", "GUARDRAIL_ID", "GUARDRAIL_VERSION"):
        assert f"CHATGUARD_{name}" in env["Invoke"]
    for name in ("MODEL_BACKEND", "EMBEDDING_MODEL_ID", "EMBEDDING_DIMENSIONS"):
        assert f"CHATGUARD_{name}" in env["Retrieve"]
    for state in ("Quota", "CostGate", "Reconcile"):
        assert "CHATGUARD_TABLE_NAME" in env[state]


def test_the_outputs_doctor_reads_exist(synth):
    outputs = {key: str(value) for key, value in synth.chat_json["Outputs"].items()}
    for name in ("DistributionId", "AlertTopicArn", "TableName", "ModelBudgetName"):
        assert find_output(outputs, name) is not None, name


def test_the_deployed_web_acl_passes_doctors_json_check(synth):
    (acl,) = synth.resources("AWS::WAFv2::WebACL", stack="edge").values()
    assert non_json_blocks(acl["Properties"], lambda group: []) == []
    # ... and the same check fails the ACL once a rule blocks with WAF's default 403.
    weakened = dict(acl["Properties"])
    weakened["Rules"] = [{**rule, "Action": {"Block": {}}} for rule in weakened["Rules"]]
    names = [rule["Name"] for rule in weakened["Rules"]]
    assert non_json_blocks(weakened, lambda group: []) == names
