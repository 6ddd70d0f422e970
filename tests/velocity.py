"""Apache Velocity 1.7 (Debian's `velocity`), the engine API Gateway's mapping templates run
on, behind a small Java harness (tests/infra/velocity/VelocityHarness.java) compiled at test
time. It provides $input, $util (commons-lang 2.6 escapeJavaScript, parseJson) and $context
the way API Gateway documents them. The engine is never optional: where it is missing the
test FAILS (CI installs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).with_name("infra") / "velocity" / "VelocityHarness.java"
JARS = (
    "/usr/share/java/velocity-1.7.jar",  # Debian: velocity
    "/usr/share/java/commons-lang-2.6.jar",  # Debian: libcommons-lang-java
    "/usr/share/java/commons-collections3.jar",  # a dependency of velocity
)
INSTALL = "apt-get install velocity libcommons-lang-java default-jdk-headless (.ci/run does)"
ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Chat"
Render = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def engine(classes: Path) -> Render:
    """Compile the harness into `classes`; the returned function renders a batch of cases
    ({template, body, headers, requestId}) into [{output, status}] in one JVM."""
    missing = [jar for jar in JARS if not Path(jar).is_file()]
    java, javac = shutil.which("java"), shutil.which("javac")
    if missing or not java or not javac:
        pytest.fail(f"the Velocity engine is missing ({missing or 'java/javac'}): {INSTALL}")
    classpath = ":".join((*JARS, str(classes)))
    subprocess.run(
        [javac, "-nowarn", "-d", str(classes), "-cp", classpath, str(HARNESS)],
        check=True,
        capture_output=True,
    )

    def render(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        done = subprocess.run(
            [java, "-cp", classpath, "VelocityHarness"],
            input=json.dumps(cases).encode(),
            capture_output=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        results: list[dict[str, Any]] = json.loads(done.stdout)
        assert len(results) == len(cases)
        return results

    return render


def succeeded(output: object) -> str:
    """StartSyncExecution's answer for a SUCCEEDED execution with this state output."""
    execution = {
        "executionArn": ARN + ":x",
        "status": "SUCCEEDED",
        "output": json.dumps(output, ensure_ascii=False),
    }
    return json.dumps(execution, ensure_ascii=False)
