"""Gate steps stay light: importing one never pulls numpy (only S4 and S7 ship it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from steps.lib.runtime.stages import STAGES

ROOT = Path(__file__).resolve().parents[2]
GATES = [stage.module for stage in STAGES if not stage.needs_numpy]


def test_the_gate_steps_are_the_five_without_numpy():
    assert GATES == [
        "steps.origin_verify", "steps.quota", "steps.cost_gate", "steps.invoke", "steps.reconcile",
    ]  # fmt: skip


@pytest.mark.parametrize("module", GATES)
def test_a_gate_step_imports_no_numpy(module):
    code = f"import sys, {module}; print('numpy' in sys.modules, 'boto3' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    numpy_loaded, _ = out.stdout.split()
    assert numpy_loaded == "False"
