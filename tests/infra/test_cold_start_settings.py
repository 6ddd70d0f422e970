"""What the cold-start model chose, as synthesized: memory, timeouts, SnapStart, bytecode."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import pytest

from infra import bundling
from infra import config as deploy_config
from steps.lib.runtime.stages import STAGES
from tests.infra.conftest import function_of

# The timeouts' order (step < workflow < integration < CloudFront) is test_timeout_order.py.


def test_snap_start_is_off_by_default_and_the_workflow_invokes_the_functions(synth):
    assert deploy_config.load(synth.context).ops.snap_start is False
    for stage in STAGES:
        _, fn = function_of(synth, stage.state)
        assert "SnapStart" not in fn["Properties"]
    assert synth.resources("AWS::Lambda::Alias") == {}


def test_snap_start_must_be_a_boolean():
    from tests.infra.conftest import deploy_context

    ctx = copy.deepcopy(deploy_context())
    ctx["chatguard/ops"]["snap_start"] = "yes"
    with pytest.raises(deploy_config.ConfigError, match="snap_start"):
        deploy_config.load(ctx)


@pytest.mark.parametrize("snap_start", [True, False])
def test_snap_start_on_publishes_a_version_and_the_target_is_its_alias(snap_start):
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_logs as logs
    from aws_cdk import aws_sns as sns
    from aws_cdk.assertions import Template

    from infra.blocks.pipeline_step import PipelineStep

    stack = cdk.Stack(cdk.App(), "Probe", env=cdk.Environment(region="eu-west-1"))
    step = PipelineStep(
        stack, "Quota", stage=STAGES[1], code=lambda_.Code.from_inline("def handler(e, c): 0"),
        environment={}, statements=[], log_retention=logs.RetentionDays.ONE_DAY,
        reserved_concurrency=None, topic=sns.Topic(stack, "Topic"), snap_start=snap_start,
    )  # fmt: skip
    template = Template.from_stack(stack).to_json()["Resources"]
    kinds = {v["Type"]: (k, v) for k, v in template.items()}
    fn = kinds["AWS::Lambda::Function"][1]["Properties"]
    if not snap_start:
        assert "SnapStart" not in fn and "AWS::Lambda::Alias" not in kinds
        assert step.target is step.function
        return
    assert fn["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    version_id, version = kinds["AWS::Lambda::Version"]
    assert version["DeletionPolicy"] == "Delete"  # replaced versions do not keep a snapshot
    alias = kinds["AWS::Lambda::Alias"][1]["Properties"]
    assert alias["Name"] == "live"
    assert alias["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
    assert step.target is not step.function


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 41 + 1\n")
    return root


def test_bytecode_is_unchecked_hash_for_the_runtime_version(tmp_path, monkeypatch):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setattr(bundling, "PYTHON_VERSION", here)  # this interpreter plays the runtime
    python = bundling.lambda_python()
    assert python == sys.executable
    root = _tree(tmp_path / "asset")
    bundling.compile_bytecode(root, python)
    (pyc,) = (root / "pkg" / "__pycache__").glob("*.pyc")
    assert pyc.name == f"__init__.{sys.implementation.cache_tag}.pyc"
    flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
    assert flags == 0b01  # hash-based, source never checked: zip timestamps cannot stale it
    # The runtime really uses it: with the source changed, the import still gives 42.
    (root / "pkg" / "__init__.py").write_text("VALUE = 0\n")
    spec = importlib.util.spec_from_file_location("pkg", root / "pkg" / "__init__.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.VALUE == 42


def test_without_a_runtime_python_the_asset_ships_source_only(monkeypatch, capsys):
    monkeypatch.setattr(bundling, "PYTHON_VERSION", "3.99")  # no such interpreter anywhere
    monkeypatch.delenv("CHATGUARD_LAMBDA_PYTHON", raising=False)
    bundling._interpreter_for.cache_clear()
    assert bundling.lambda_python() is None
    bundling._note_source_only.cache_clear()
    bundling._note_source_only()
    assert "ship without bytecode" in capsys.readouterr().err


def test_with_a_runtime_python_synthesis_says_the_bundles_carry_bytecode(
    tmp_path, monkeypatch, capsys
):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setattr(bundling, "PYTHON_VERSION", here)  # this interpreter plays the runtime
    bundling._interpreter_for.cache_clear()
    bundling._note_bytecode.cache_clear()
    monkeypatch.setattr(bundling, "ensure_dependencies", lambda asset: _tree(tmp_path / "deps"))
    bundling.build_asset(bundling.GATE_ASSET, tmp_path / "out")
    assert f"carry bytecode compiled by Python {here}" in capsys.readouterr().err
    assert list((tmp_path / "out" / "steps").rglob(f"*.cpython-{here.replace('.', '')}.pyc"))
    bundling._interpreter_for.cache_clear()


def test_a_wrong_version_named_by_the_environment_is_not_used(monkeypatch):
    monkeypatch.setattr(bundling, "PYTHON_VERSION", "3.99")
    monkeypatch.setenv("CHATGUARD_LAMBDA_PYTHON", sys.executable)  # a python, but not 3.99
    bundling._interpreter_for.cache_clear()
    assert bundling.lambda_python() is None
