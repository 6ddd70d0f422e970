"""Pacing is said where it shapes what the user sees (issue 27, item 13): `serve`'s limits
lines name it, and the demo's last line says how much of the day's ceiling was released
when its crowd was degraded below the ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatguard.cli import main
from local.commands.chat_demo_serve import local_settings
from local.commands.limits import released_line, summary
from tests.clock import at


def test_the_limits_lines_say_pacing_is_on_and_how_to_turn_it_off() -> None:
    lines = summary(local_settings())
    assert lines[-1].startswith("pacing: on: 0.5 of the daily ceiling is available at 00:00")
    assert "--pacing off" in lines[-1]
    assert summary(local_settings(pacing="off"))[-1].startswith("pacing: off")


@pytest.mark.parametrize(
    ("instant", "released"),
    [("2026-11-15 00:00:00", "$0.0150"), ("2026-11-15 12:00:00", "$0.0225"),
     ("2026-11-15 23:59:59", "$0.029999")],
)  # fmt: skip
def test_the_released_share_follows_the_clock_it_is_given(instant: str, released: str) -> None:
    s = local_settings(daily_ceiling_usd="0.03")
    line = released_line(s, 12_000, at(instant))
    assert line and f"{released} of the $0.0300 daily ceiling was released" in line
    assert f"by {instant[11:16]} UTC" in line and "spending stopped at $0.0120" in line
    assert released_line(s.replace(pacing="off"), 12_000, at(instant)) is None


@pytest.mark.slow
def test_the_demo_ends_saying_what_pacing_held_back(
    knowledge_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--knowledge", str(knowledge_dir)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("pacing: by ") and "daily ceiling was released" in last
