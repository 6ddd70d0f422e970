"""The README's deploy sequence, run with `make` in a copy of the project.

Step 2 builds the index (a stand-in for the Titan build: the same indexer, an embedder that
carries Titan's id), step 3 edits cdk.json, step 4 runs `make deploy`. The CDK CLI is
replaced by a stand-in (``fake_cdk.py`` below) that runs the app the way ``cdk synth`` does
(cdk.json's ``app`` command with ``CDK_OUTDIR``) and records ``deploy`` instead of calling
AWS. What it shows: the deploy bundles the index the operator built, and the offline
sample index can no longer reach a Bedrock deployment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.build import build as build_index
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import DEGRADED_MATRIX_FILE, bedrock_embedder_id
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID
from steps.lib.providers.local_embedder import shared
from steps.lib.runtime.settings import PROJECT_ROOT, cdk_context

pytestmark = [pytest.mark.infra, pytest.mark.slow]

FAKE_CDK = """
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_CDK_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[0] == "synth":
    app = json.load(open("cdk.json"))["app"].split()
    app[0] = sys.executable  # cdk.json says python3: the venv's, as the Makefile puts it first
    env = {**os.environ, "CDK_OUTDIR": "cdk.out"}
    sys.exit(subprocess.run(app, env=env).returncode)
if args[0] == "deploy":
    sys.exit(0 if os.path.isfile("cdk.out/manifest.json") else 3)
sys.exit(2)
"""


class TitanStandIn:
    """Stand-in for the Titan build (no Bedrock here): hashing vectors under Titan's id."""

    def __init__(self, model_id: str, dimensions: int) -> None:
        self.id = bedrock_embedder_id(model_id, dimensions)
        self.dimensions = dimensions
        self._vectors = HashingEmbedder(dimensions)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors.embed(texts)


def _tracked_files() -> list[str]:
    result = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True
    )
    return [name for name in result.stdout.decode().split("\0") if name]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the tracked files (mtimes kept, so make sees an up-to-date venv)."""
    root = tmp_path / "project"
    for name in _tracked_files():
        source = PROJECT_ROOT / name
        if source.is_file():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (root / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    cache = PROJECT_ROOT / "build" / "lambda-deps"
    cache.mkdir(parents=True, exist_ok=True)
    (root / "build").mkdir(exist_ok=True)
    (root / "build" / "lambda-deps").symlink_to(cache)
    fake = tmp_path / "fake_cdk.py"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CDK}", encoding="utf-8")
    fake.chmod(0o755)
    return root


def _set_chat_region(root: Path, region: str) -> None:
    """README step 3: the operator edits cdk.json (now newer than any built index)."""
    path = root / "cdk.json"
    context = json.loads(path.read_text(encoding="utf-8"))
    context["context"]["chatguard/ops"]["chat_region"] = region
    path.write_text(json.dumps(context, indent=2), encoding="utf-8")


def _make_deploy(root: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = root.parent / "cdk-calls.log"
    log.write_text("", encoding="utf-8")
    fake = root.parent / "fake_cdk.py"
    env = {
        **os.environ,
        "PYTHONPATH": str(root),  # the copy's code, not the editable install's
        "FAKE_CDK_LOG": str(log),
        "CDK_DEFAULT_ACCOUNT": "111111111111",
    }
    result = subprocess.run(
        ["make", "--no-print-directory", "deploy", f"CDK={fake}"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    return result, log.read_text(encoding="utf-8").splitlines()


def _build(root: Path, embedder: object, *, degraded: bool | None = None) -> None:
    """As `chatguard index` builds: beside Titan's vectors (a stand-in here) also the
    local model's, for the degraded answer, unless `degraded` is False (an index from
    before they were written)."""
    local = isinstance(embedder, TitanStandIn) if degraded is None else degraded
    build_index(
        root / "examples" / "site",
        root / "build" / "knowledge",
        IndexPolicy.from_context(),
        embedder,  # type: ignore[arg-type]
        CachedLocalEmbedder(shared, cache_path=root / "build" / "local-cache.json")
        if local
        else None,
    )


def test_the_sample_index_cannot_reach_a_bedrock_deployment(project: Path) -> None:
    # The README's quick start ran first (`make run` builds the offline sample index) ...
    _build(project, HashingEmbedder(1024))
    # ... and the operator skipped step 2: cdk.json edited, then `make deploy`.
    _set_chat_region(project, "eu-west-1")
    result, calls = _make_deploy(project)
    assert result.returncode != 0
    refusals = [line for line in result.stderr.splitlines() if "synthesis refused" in line]
    assert len(refusals) == 1, result.stderr
    assert "build/knowledge" in refusals[0] and "hashing-v2" in refusals[0]
    # The site cdk.json names (not a placeholder), and the route without a Titan index.
    assert "`chatguard index examples/site --out build/knowledge --embedder titan`" in refusals[0]
    assert '"embedder": "local"' in refusals[0] and "SITE_DIR" not in refusals[0]
    assert "`chatguard index examples/site --out build/knowledge`" in refusals[0]
    assert "Traceback" not in result.stderr
    assert calls == ["synth --quiet --no-notices"], calls  # never reached deploy
    # make did not rebuild the index behind the operator's back either.
    meta = json.loads((project / "build/knowledge/knowledge.json").read_text(encoding="utf-8"))
    assert meta["embedder"]["id"] == "hashing-v2"


def test_the_readme_sequence_deploys_the_index_the_operator_built(project: Path) -> None:
    settings = cdk_context()["chatguard"]
    titan = TitanStandIn(settings["embedding_model_id"], settings["embedding_dimensions"])
    _build(project, HashingEmbedder(1024))  # the quick start's sample index, as above
    _build(project, titan)  # README step 2 (the Titan build, stand-in)
    _set_chat_region(project, "eu-west-1")  # step 3: cdk.json now newer than the index
    result, calls = _make_deploy(project)  # step 4
    assert result.returncode == 0, result.stderr[-3000:]
    assert calls == ["synth --quiet --no-notices", "deploy --all --app cdk.out --no-notices"]
    bundled = sorted((project / "cdk.out").glob("asset.*/build/knowledge/knowledge.json"))
    assert bundled, "no Lambda asset carries the index"
    for path in bundled:  # Retrieve and Degraded ship exactly the index step 2 wrote
        meta = json.loads(path.read_text(encoding="utf-8"))
        assert meta["embedder"] == {"id": titan.id, "dimensions": titan.dimensions}
        assert meta["degraded"]["embedder"] == {"id": LOCAL_MODEL_ID, "dimensions": 384}
    # Only the step with the local model (S7) carries the second matrix it ranks with.
    carriers = sorted((project / "cdk.out").glob("asset.*/build/knowledge/" + DEGRADED_MATRIX_FILE))
    assert len(carriers) == 1 and (carriers[0].parents[2] / "onnxruntime").is_dir()
    assert len(bundled) == 2
    assert "chatguard index examples/site" not in result.stdout  # make never rebuilt it


def test_a_titan_index_without_the_degraded_answers_vectors_stops_the_deploy(
    project: Path,
) -> None:
    # An index built by a chatguard from before S7 ranked with the local model.
    settings = cdk_context()["chatguard"]
    titan = TitanStandIn(settings["embedding_model_id"], settings["embedding_dimensions"])
    _build(project, titan, degraded=False)
    _set_chat_region(project, "eu-west-1")
    result, calls = _make_deploy(project)
    assert result.returncode != 0 and calls == ["synth --quiet --no-notices"], calls
    refusals = [line for line in result.stderr.splitlines() if "synthesis refused" in line]
    assert len(refusals) == 1, result.stderr
    assert f"carries no '{LOCAL_MODEL_ID}' vectors for the degraded answer" in refusals[0]
    assert "`chatguard index examples/site --out build/knowledge --embedder titan`" in refusals[0]
    assert '"degraded_embedder": "none"' in refusals[0]
    assert "Traceback" not in result.stderr


def test_a_page_edited_after_the_index_was_built_stops_the_deploy(project: Path) -> None:
    settings = cdk_context()["chatguard"]
    titan = TitanStandIn(settings["embedding_model_id"], settings["embedding_dimensions"])
    _build(project, titan)  # README step 2, then the operator edits a page and deploys
    page = project / "examples" / "site" / "posts" / "waf-rate-limiting.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA new paragraph.\n", "utf-8")
    _set_chat_region(project, "eu-west-1")
    result, calls = _make_deploy(project)
    assert result.returncode != 0
    refusals = [line for line in result.stderr.splitlines() if "synthesis refused" in line]
    assert len(refusals) == 1, result.stderr
    assert "examples/site changed since build/knowledge was built" in refusals[0]
    assert "1 changed (posts/waf-rate-limiting.md)" in refusals[0]
    assert "`chatguard index examples/site --out build/knowledge --embedder titan`" in refusals[0]
    assert "Traceback" not in result.stderr
    assert calls == ["synth --quiet --no-notices"], calls  # never reached deploy
