"""`chatguard doctor` without credentials says so first, and says what a run costs only
once it can run (issue 27, item 11): the real command, in a fresh process, with an empty
AWS configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _doctor(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true", **extra,
    )  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "chatguard", "doctor"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_no_credentials_is_said_first_and_nothing_about_cost(tmp_path: Path) -> None:
    done = _doctor(tmp_path)  # neither credentials nor a Region
    assert done.returncode == 2 and done.stdout == ""
    assert "no AWS credentials" in done.stderr and "Region" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_with_credentials_the_missing_region_is_next_and_still_costs_nothing(
    tmp_path: Path,
) -> None:
    keys = dict.fromkeys(CREDENTIALS, "testing")
    done = _doctor(tmp_path, **keys)
    assert done.returncode == 2 and done.stdout == ""
    assert "no AWS Region" in done.stderr and "--region" in done.stderr
