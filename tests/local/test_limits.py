"""Limits that make sense together: `serve` says how many worst-case messages the day, the
month and one visitor admit, and warns when a visitor's cap (or the day's) is below one
reservation, which would degrade the very first message."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatguard.cli import main
from local.commands import limits
from local.server.uvicorn_server import ChatServer
from steps.lib.money.pricing import largest_reserve_micros
from steps.lib.runtime.settings import Settings

BASE = Settings(model_backend="offline")


def test_the_defaults_admit_messages_and_warn_of_nothing() -> None:
    lines = limits.summary(BASE)
    assert len(lines) == 2 and lines[0].startswith("limits:")
    assert lines[1].startswith("pacing: on")  # a line of fact, not a warning
    counts = limits.admitted(BASE)
    assert counts["day"] == BASE.daily_ceiling_micros // largest_reserve_micros(BASE) > 0
    assert 0 < counts["visitor"] <= BASE.visitor_message_limit


def test_a_daily_ceiling_of_three_cents_warns_that_visitors_degrade_at_once() -> None:
    s = BASE.replace(daily_ceiling_usd="0.03")  # the README's old example
    (warning,) = limits.warnings(s)
    assert "visitor's cap" in warning and "first message" in warning
    assert "--visitor-cost-share to at least" in warning


def test_a_daily_ceiling_below_one_reservation_warns_that_everything_degrades() -> None:
    (warning,) = limits.warnings(BASE.replace(daily_ceiling_usd="0.001"))
    assert "every message gets the degraded answer" in warning


@settings(max_examples=200, deadline=None)
@given(
    daily=st.decimals(min_value=Decimal("0.001"), max_value=Decimal("50"), places=3),
    share=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("1"), places=2),
)
def test_the_warning_and_the_suggested_share_are_exact(daily: Decimal, share: Decimal) -> None:
    s = BASE.replace(daily_ceiling_usd=daily, monthly_ceiling_usd=daily * 31,
                     visitor_cost_share=share)  # fmt: skip
    reserve = largest_reserve_micros(s)
    found = limits.warnings(s)
    # A warning exactly when one reservation does not fit a visitor's cap.
    assert bool(found) == (s.visitor_ceiling_micros < reserve)
    if found and s.daily_ceiling_micros >= reserve:
        suggested = Decimal(found[0].split("--visitor-cost-share to at least ")[1].split()[0])
        fixed = s.replace(visitor_cost_share=suggested)
        assert fixed.visitor_ceiling_micros >= reserve  # following the advice works
        assert limits.warnings(fixed) == []


@pytest.mark.slow
def test_serve_says_the_limits_at_start_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], knowledge_dir: Path
) -> None:
    monkeypatch.setattr(ChatServer, "serve_forever", lambda self: None)
    argv = ["serve", "--port", "0", "--quiet", "--knowledge", str(knowledge_dir),
            "--daily-ceiling-usd", "0.03", "--visitor-cost-share", "0.04"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "limits:" in err and "(0.04 of the day" in err
    assert "warning: a visitor's cap" in err


def test_a_tiny_ceiling_shows_the_visitors_share_in_micro_dollars() -> None:
    from local.commands.chat_demo_serve import local_settings
    from local.commands.limits import summary

    line = summary(local_settings(daily_ceiling_usd="0.001"))[0]
    assert "(0.05 of the day = $0.000050," in line and "$0.0000," not in line
