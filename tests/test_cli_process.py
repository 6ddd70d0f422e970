"""The `chatguard` process: building its parser imports only what the arguments need, and
its exit skips the last garbage collections (chatguard/cli.py, `run`)."""

from __future__ import annotations

import gc
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from chatguard import cli

ROOT = Path(__file__).resolve().parents[1]
# Modules of other commands (and the libraries behind them) that `chat` never runs.
NOT_FOR_CHAT = (
    "indexer.titan", "indexer.build", "ops.doctor.command", "ops.verify", "ops.mode", "ops.rotate",
    "ops.spend", "ops.billing", "ops.traces", "ops.http", "numpy", "boto3", "botocore",
)  # fmt: skip
PARSE_CHAT = f"""
import sys
from chatguard.cli import build_parser, parse
args = parse(build_parser(), ["chat", "hi"])
assert args.command == "chat"
print(",".join(m for m in {NOT_FOR_CHAT!r} if m in sys.modules))
"""


def test_parsing_chat_in_a_fresh_interpreter_imports_no_other_commands_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PARSE_CHAT], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "", f"the parser imported {done.stdout.strip()}"


def test_a_command_still_imports_its_module_when_it_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """rotate's choices come from a leaf module; the command itself still refuses a bad
    --local URL through the rotation's own path (the parser alone would not get there)."""
    code = cli.main(["rotate", "salt", "--dry-run", "--local", "http://192.0.2.1:1"])
    assert code == 2 and "cannot reach the server" in capsys.readouterr().err
    assert "ops.rotate" in sys.modules


def test_the_process_collects_less_often_freezes_the_heap_after_main_and_exits_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def main() -> int:
        calls.append("main")
        return 3

    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "set_threshold", lambda *t: calls.append(f"threshold {t[0]}"))
    with pytest.raises(SystemExit) as exited:
        cli.run()
    assert exited.value.code == 3
    assert calls == [f"threshold {cli.GC_THRESHOLD}", "main", "freeze"]


def test_the_console_script_runs_the_process_entry_and_python_m_still_starts() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["chatguard"] == "chatguard.cli:run"
    done = subprocess.run(
        [sys.executable, "-m", "chatguard", "--version"], cwd=ROOT, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("chatguard ")
