"""What lands in cdk.out: locally bundled assets, no Docker, no secret, no raw IP."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

import pytest

from infra.bundling import GATE_ASSET, INVOKE_ASSET, RETRIEVAL_ASSET
from steps.lib.grounding.knowledge import ARTIFACT_FILES
from tests.infra.conftest import function_of

pytestmark = pytest.mark.infra

LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024
IPV4 = re.compile(rb"(?<![\w.])(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?![\w.])")
DOCUMENTATION = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24",
                                                      "203.0.113.0/24", "127.0.0.0/8",
                                                      "0.0.0.0/32")]  # fmt: skip


def _asset_dir(synth, state: str) -> Path:
    _, fn = function_of(synth, state)
    key = fn["Properties"]["Code"]["S3Key"]
    return synth.outdir / f"asset.{key.removesuffix('.zip')}"


def _vendored(path: Path, root: Path) -> bool:
    """Third-party wheels (botocore, numpy, ...): any top-level entry a .dist-info RECORD lists."""
    top = path.relative_to(root).parts[0]
    return top != "steps" and top != "build"


def test_no_asset_is_built_with_docker(synth):
    for manifest in synth.outdir.glob("*.assets.json"):
        data = json.loads(manifest.read_text())
        assert data.get("dockerImages", {}) == {}, manifest.name
        for asset in data["files"].values():
            assert "executable" not in asset["source"], "no asset is built by a command"
    assert "docker" not in (synth.outdir / "manifest.json").read_text().lower()


def test_gate_steps_ship_steps_but_no_sdk_numpy_or_index(synth):
    root = _asset_dir(synth, "Quota")
    for state in ("OriginVerify", "CostGate", "Reconcile"):
        assert _asset_dir(synth, state) == root
    assert (root / "steps" / "quota.py").is_file()
    # The runtime's own botocore serves them (infra/runtime_sdk.py): none compiled from the zip.
    assert not (root / "botocore").exists() and not (root / "urllib3").exists()
    assert not (root / "boto3").exists()
    assert not (root / "numpy").exists()
    assert not (root / "build").exists()
    assert GATE_ASSET.requirements() == tuple(sorted(GATE_ASSET.requirements()))
    assert all("==" in r for r in GATE_ASSET.requirements())


def test_invoke_alone_ships_its_pinned_botocore(synth):
    root = _asset_dir(synth, "Invoke")
    assert root != _asset_dir(synth, "Quota")
    assert (root / "steps" / "invoke.py").is_file()
    assert (root / "botocore-1.44.8.dist-info").is_dir()
    assert not (root / "boto3").exists()  # the steps build botocore clients directly
    assert "botocore==1.44.8" in INVOKE_ASSET.requirements()
    assert not (_asset_dir(synth, "Retrieve") / "botocore").exists()


def test_retrieval_steps_ship_arm64_numpy_and_the_knowledge_artifact(synth):
    for state in ("Retrieve", "Degraded"):
        root = _asset_dir(synth, state)
        assert (root / "steps" / "retrieve.py").is_file()
        for name in ARTIFACT_FILES:  # knowledge.json, embeddings.npy, index.bin
            assert (root / "build" / "knowledge" / name).is_file()
        wheel = (root / "numpy-2.4.6.dist-info" / "WHEEL").read_text()
        assert "aarch64" in wheel and "cp313" in wheel
    assert "numpy==2.4.6" in RETRIEVAL_ASSET.requirements()


def test_beside_titan_only_the_degraded_step_ships_the_local_model(synth):
    # cdk.json: Retrieve embeds with Titan (a billed call), and S7, which may make none,
    # ranks with the local model's vectors (`degraded_embedder`): it alone carries the
    # model and its runtime, and its environment says so.
    runtime = synth.context["chatguard"]
    assert runtime["embedder"] == "titan" and runtime["degraded_embedder"] == "local"
    retrieve, s7 = _asset_dir(synth, "Retrieve"), _asset_dir(synth, "Degraded")
    assert retrieve != s7
    assert (s7 / "onnxruntime").is_dir() and (s7 / "tokenizers").is_dir()
    assert not (retrieve / "onnxruntime").exists() and not (retrieve / "tokenizers").exists()
    env = function_of(synth, "Degraded")[1]["Properties"]["Environment"]["Variables"]
    assert env["CHATGUARD_EMBEDDER"] == "titan"
    assert env["CHATGUARD_DEGRADED_EMBEDDER"] == "local"
    retrieve_env = function_of(synth, "Retrieve")[1]["Properties"]["Environment"]["Variables"]
    assert "CHATGUARD_DEGRADED_EMBEDDER" not in retrieve_env


def test_every_step_asset_fits_the_lambda_unzipped_limit(synth):
    for state in ("Quota", "Retrieve", "Degraded"):
        root = _asset_dir(synth, state)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        assert size < LAMBDA_UNZIPPED_LIMIT, (state, size)


def _our_files(synth):
    for path in synth.outdir.rglob("*"):
        if not path.is_file() or path.suffix in {".zip", ".npy", ".so"}:
            continue
        asset_root = next((p for p in path.parents if p.name.startswith("asset.")), None)
        if asset_root is not None and _vendored(path, asset_root):
            continue
        yield path


def raw_ips(paths) -> list[tuple[str, str]]:
    found = []
    for path in paths:
        for match in IPV4.finditer(path.read_bytes()):
            try:
                ip = ipaddress.ip_address(match.group(1).decode())
            except ValueError:
                continue  # a version number such as 1.44.8.0 is not an address
            if not any(ip in net for net in DOCUMENTATION):
                found.append((path.name, str(ip)))
    return found


def test_the_ip_scan_finds_a_planted_address_and_spares_documentation_ranges(tmp_path):
    # Built from its parts so that the repository holds no address literal outside the
    # documentation ranges (the rule this scan enforces on cdk.out).
    address = str(ipaddress.IPv4Address((10 << 24) | (20 << 16) | (30 << 8) | 40))
    planted = tmp_path / "template.json"
    planted.write_text(f'{{"a": "{address}", "b": "192.0.2.7", "v": "1.44.8.0.1"}}')
    assert raw_ips([planted]) == [("template.json", address)]


def test_cdk_out_holds_no_raw_ip_address(synth):
    assert raw_ips(_our_files(synth)) == []


def test_cdk_out_holds_no_secret_value(synth):
    texts = [p.read_text() for p in synth.outdir.glob("*.json")]
    # A secret value in the documented format would show up as a "current" key somewhere.
    assert not any(re.search(r'\\?"current\\?"\s*:', text) for text in texts)
    templates = [json.loads(p.read_text()) for p in synth.outdir.glob("*.template.json")]
    for template in templates:
        for resource in template["Resources"].values():
            assert resource["Type"] != "AWS::SSM::Parameter"
            env = resource["Properties"].get("Environment", {}).get("Variables", {})
            for key, value in env.items():
                if re.search(r"SECRET|SALT|SIGNING", key):  # a name or a duration, never a value
                    assert str(value).startswith("/") or str(value).isdigit(), key
        outputs = json.dumps(template.get("Outputs", {}))
        assert "Secrets" not in outputs, "no output may reference a generated secret"


def _runtime_sdk_stand_in(dest: Path) -> Path:
    """Offline stand-in for the runtime's own SDK (/var/runtime on Lambda): this machine's
    botocore and its dependencies, nothing else (no numpy, no Powertools)."""
    import importlib

    dest.mkdir()
    for name in ("botocore", "urllib3", "dateutil", "jmespath", "six"):
        module = importlib.import_module(name)
        origin = Path(module.__file__ or "")
        source = origin.parent if origin.name == "__init__.py" else origin
        (dest / source.name).symlink_to(source)
    return dest


def _import_in_bundle(root: Path, runtime: Path, modules: tuple[str, ...]) -> str:
    import subprocess
    import sys

    code = (
        "import importlib, botocore, sys\n"
        f"for m in {modules!r}:\n"
        "    assert callable(importlib.import_module('steps.' + m).handler)\n"
        "print(botocore.__file__.startswith(sys.argv[1]), botocore.__version__)\n"
    )
    # -S: no site-packages; the bundle first, then the runtime's SDK, as Lambda orders them.
    result = subprocess.run(
        [sys.executable, "-S", "-B", "-c", code, str(root)],
        env={"PYTHONPATH": f"{root}:{runtime}", "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-1500:]
    return result.stdout.strip()


def test_gate_handlers_import_the_runtimes_botocore_and_invoke_its_own_pinned_one(synth, tmp_path):
    runtime = _runtime_sdk_stand_in(tmp_path / "runtime")
    gate = ("origin_verify", "quota", "cost_gate", "reconcile")
    assert _import_in_bundle(_asset_dir(synth, "Quota"), runtime, gate).startswith("False ")
    assert _import_in_bundle(_asset_dir(synth, "Invoke"), runtime, ("invoke",)) == "True 1.44.8"
