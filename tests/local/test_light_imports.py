"""moto's EC2 and Batch models stay unimported until something reads them (local/
light_imports.py), and whatever does read them gets moto's full model. Each check runs in
a fresh interpreter: which modules a process has imported is process-wide."""

from __future__ import annotations

import subprocess
import sys

from steps.lib.runtime.settings import PROJECT_ROOT

IMPORTS_WHAT_THE_RUNTIME_DOES = """
import sys
{defer}
import moto.ssm.models  # imports moto.ec2
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_batch,  # imports moto.batch.utils
)
print(sorted(m for m in ("moto.ec2.models", "moto.batch.models") if m in sys.modules))
"""

READS_THE_BACKENDS = """
from local.engine import light_imports
light_imports.defer()
import moto.ssm.models
from moto.backends import get_backend
from moto.ec2 import ec2_backends
print(type(ec2_backends["123456789012"]["us-east-1"]).__name__,
      type(get_backend("batch")["123456789012"]["us-east-1"]).__name__,
      "us-east-1" in ec2_backends["123456789012"].regions)
"""


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True,
        check=True, timeout=300,
    )  # fmt: skip
    return done.stdout.strip()


def test_the_runtimes_imports_leave_ec2_and_batch_unimported() -> None:
    deferred = "from local.engine import light_imports\nlight_imports.defer()"
    assert _run(IMPORTS_WHAT_THE_RUNTIME_DOES.format(defer=deferred)) == "[]"
    # Without the deferral the same imports load both models (what the deferral saves).
    both = "['moto.batch.models', 'moto.ec2.models']"
    assert _run(IMPORTS_WHAT_THE_RUNTIME_DOES.format(defer="")) == both


def test_code_that_reads_the_backends_gets_motos_full_models() -> None:
    assert _run(READS_THE_BACKENDS) == "EC2Backend BatchBackend True"
