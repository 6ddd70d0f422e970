"""The local bundler's pip invocation: pinned, platform-targeted, immune to local pip config."""

from __future__ import annotations

from pathlib import Path

from infra import bundling


def test_pip_targets_linux_arm64_cpython313_wheels_only_and_ignores_local_config():
    command = bundling.pip_command(("boto3==1.44.8",), Path("out"))
    assert "--isolated" in command  # no constraints file, extra index or find-links here
    assert "--only-binary=:all:" in command and "--no-deps" in command
    assert command[command.index("--python-version") + 1] == "3.13"
    assert command[command.index("--abi") + 1] == "cp313"
    platforms = [command[i + 1] for i, v in enumerate(command) if v == "--platform"]
    assert "manylinux2014_aarch64" in platforms
    assert command[-1] == "boto3==1.44.8"


def test_every_requirement_is_pinned_and_boto3_supports_guardcontent_and_cachepoint():
    requirements = dict(r.split("==") for r in bundling.INVOKE_ASSET.requirements())
    assert all(requirements.values())
    botocore = tuple(int(x) for x in requirements["botocore"].split(".")[:3])
    assert botocore >= (1, 39, 0)  # CountTokens; ApplyGuardrail is older


def test_the_cache_key_follows_the_requirement_set(tmp_path, monkeypatch):
    before = bundling.GATE_ASSET.dependency_key()
    assert before != bundling.RETRIEVAL_ASSET.dependency_key()
    (tmp_path / "lambda.txt").write_text("boto3==1.0.0\n")
    monkeypatch.setattr(bundling, "REQUIREMENTS_DIR", tmp_path)
    assert bundling.GATE_ASSET.dependency_key() != before


def test_a_missing_knowledge_artifact_stops_synthesis_with_a_clear_message(tmp_path, monkeypatch):
    import pytest

    monkeypatch.setattr(bundling, "KNOWLEDGE_DIR", tmp_path)
    with pytest.raises(bundling.BundlingError, match="make index"):
        bundling.RETRIEVAL_ASSET.source_hash()
