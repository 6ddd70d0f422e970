"""`make synth-offline` never replaces the operator's index (issue 27, item 1).

The README has the operator edit cdk.json and build their own index into build/knowledge.
The target used to depend on the sample index's make rule, which rebuilds build/knowledge
from examples/site whenever cdk.json is newer: one synth-offline after an edit silently put
the sample index in place of the operator's, and `make synth` then refused until they
re-indexed. Run here with `make` itself in a copy of the project; the CDK CLI is a stand-in
that only records its arguments (what the synthesized app holds is tests/infra's subject).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INDEX = Path("build/knowledge/knowledge.json")
SAMPLE_BUILD = ".venv/bin/chatguard index examples/site --out build/knowledge"
SYNTH = (
    "synth --quiet --no-notices --output cdk.out.offline --context chatguard/stand_in_index=true"
)
# The rule as it was: the sample index as a prerequisite (the naive variant, shown below).
NAIVE_RULE = "synth-offline: $(STAMP) $(KNOWLEDGE) $(CDK)\n"

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in out.stdout.decode().split("\0") if name]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the tracked files (mtimes kept, so make sees an up-to-date venv)."""
    root = tmp_path / "project"
    for name in _tracked_files():
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    (root / ".venv").symlink_to(ROOT / ".venv")
    fake = tmp_path / "fake-cdk"
    fake.write_text('#!/bin/sh\necho "$*" >> "$FAKE_CDK_LOG"\n', encoding="utf-8")
    fake.chmod(0o755)
    return root


def _operators_index(root: Path) -> str:
    """An index the operator built, older than their later cdk.json edit (README step 3)."""
    index = root / INDEX
    index.parent.mkdir(parents=True, exist_ok=True)
    text = '{"embedder": {"id": "the operator\'s own", "dimensions": 1024}}'
    index.write_text(text, encoding="utf-8")
    past = time.time() - 3600
    os.utime(index, (past, past))
    (root / "cdk.json").touch()
    return text


def _make(root: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = root.parent / "cdk-calls.log"
    log.write_text("", encoding="utf-8")
    env = {**os.environ, "FAKE_CDK_LOG": str(log), "PYTHONPATH": str(root)}
    done = subprocess.run(
        ["make", "--no-print-directory", *args, f"CDK={root.parent / 'fake-cdk'}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    return done, log.read_text(encoding="utf-8").splitlines()


def test_synth_offline_keeps_the_operators_index_after_a_cdk_json_edit(project: Path) -> None:
    text = _operators_index(project)
    done, calls = _make(project, "synth-offline")
    assert done.returncode == 0, done.stderr
    assert (project / INDEX).read_text(encoding="utf-8") == text
    assert "indexed" not in done.stdout  # what `chatguard index` prints
    assert calls == [SYNTH]


def test_synth_offline_builds_the_sample_index_when_there_is_none(project: Path) -> None:
    done, calls = _make(project, "synth-offline")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("indexed 23 pages") and (project / INDEX).is_file()
    assert calls == [SYNTH]


def test_the_old_rule_would_have_replaced_the_index(project: Path) -> None:
    """The naive variant on the same harness: make plans the sample build over the index."""
    makefile = project / "Makefile"
    text = makefile.read_text(encoding="utf-8")
    start = text.index("synth-offline: ")
    rest = text[text.index("\t$(CDK_ENV) $(CDK_RUN) synth", start) :]
    makefile.write_text(text[:start] + NAIVE_RULE + rest, encoding="utf-8")
    _operators_index(project)
    done, _ = _make(project, "--dry-run", "synth-offline")
    assert SAMPLE_BUILD in done.stdout.splitlines()
