"""`make synth`'s output reads as text (issue 27, item 6): jsii's Node.js banner is shown
as the words it holds, not as Python bytes literals, and the CDK CLI's feature-flag count
and jsii's bare `program.js:1:5591` line are left out; the CLI's exit status is kept."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from chatguard.cdk_output import cleaned
from tests.test_make_synth_offline import project  # noqa: F401  (the copy of the project)

BANNER = "b'!!  Node 20 is end-of-life and not supported anymore by this software.  !!\\n'"
FLAGS = "85 feature flags are not configured. Run 'cdk flags --unstable=flags' to learn more."
STRAY = "/tmp/tmp7n5s83fi/lib/program.js:1:5591"
REFUSAL = "synthesis refused: build/knowledge was embedded by 'x'"
NOISY_CDK = f"""#!/bin/sh
printf '%s\\n' "{BANNER}" "{STRAY}" >&2
echo "{REFUSAL}" >&2
printf '%s\\n' "{FLAGS}" >&2
exit 3
"""


def test_each_kind_of_line() -> None:
    assert (
        cleaned(BANNER + "\n")
        == "!!  Node 20 is end-of-life and not supported anymore by this software.  !!\n"
    )
    assert cleaned(FLAGS + "\n") is None and cleaned(STRAY + "\n") is None
    for kept in (REFUSAL, "Successfully synthesized to cdk.out", "b'not closed", "WARNING x"):
        assert cleaned(kept + "\n") == kept + "\n"


def test_make_synth_shows_the_banner_as_text_and_keeps_the_failure(project: Path) -> None:  # noqa: F811
    fake = project.parent / "noisy-cdk"
    fake.write_text(NOISY_CDK, encoding="utf-8")
    fake.chmod(0o755)
    raw = subprocess.run([str(fake)], capture_output=True, text=True, check=False)
    assert BANNER in raw.stderr and FLAGS in raw.stderr  # what make used to show
    done = subprocess.run(
        ["make", "--no-print-directory", "synth", f"CDK={fake}"],
        cwd=project, env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0  # the CLI's failure is make's
    assert "!!  Node 20 is end-of-life" in done.stderr and "b'" not in done.stderr
    assert REFUSAL in done.stderr
    assert "feature flags" not in done.stderr and "program.js" not in done.stderr
