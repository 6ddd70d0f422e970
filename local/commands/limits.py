"""What the money settings admit, said at start-up: how many worst-case messages the day,
the month and one visitor allow, and a warning when a setting makes the others moot (a
visitor's cap below one reservation degrades every visitor's very first message)."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from steps.lib.money.pricing import largest_reserve_micros
from steps.lib.runtime.settings import Settings


def usd(micros: int) -> str:
    """Dollars, to the micro-dollar when cents would hide it: a 0.05 share of a $0.001
    ceiling is $0.000050, never "$0.0000"."""
    value = Decimal(micros) / 1_000_000
    if value >= 1:
        return f"${value:.2f}"
    return f"${value:.4f}" if micros % 100 == 0 else f"${value:.6f}"


def admitted(s: Settings) -> dict[str, int]:
    """Worst-case messages each cap admits (a message is admitted only if its whole
    reservation fits), and the visitor's message limit."""
    reserve = largest_reserve_micros(s)
    return {
        "reserve_micros": reserve,
        "day": s.daily_ceiling_micros // reserve,
        "month": s.monthly_ceiling_micros // reserve,
        "visitor": min(s.visitor_ceiling_micros // reserve, s.visitor_message_limit),
    }


def summary(s: Settings) -> list[str]:
    """The start-up lines: one of figures, one per warning, then how the day is paced."""
    counts = admitted(s)
    reserve = counts["reserve_micros"]
    lines = [
        f"limits: one message reserves at most {usd(reserve)}; the day's "
        f"{usd(s.daily_ceiling_micros)} admits {counts['day']} worst-case messages, the "
        f"month's {usd(s.monthly_ceiling_micros)} admits {counts['month']}; one visitor "
        f"({s.visitor_cost_share} of the day = {usd(s.visitor_ceiling_micros)}, at most "
        f"{s.visitor_message_limit} messages) admits {counts['visitor']}"
    ]
    return [*lines, *warnings(s), pacing_line(s)]


def pacing_line(s: Settings) -> str:
    """Pacing holds part of the day's ceiling back until later in the UTC day: without this
    line a crowd degraded below the ceiling looks like a wrong ceiling."""
    if s.pacing != "on":
        return "pacing: off (the whole daily ceiling is available from 00:00 UTC)"
    curve = "flat" if not s.pacing_curve else "along pacing_curve's hourly weights"
    return (
        f"pacing: on: {s.pacing_burst_share} of the daily ceiling is available at 00:00 UTC, "
        f"the rest released through the day ({curve}); --pacing off makes it all available "
        "at once"
    )


def released_line(s: Settings, spent: int, now: float) -> str | None:
    """What pacing had released of the day's ceiling at `now` (None when pacing is off)."""
    from datetime import UTC, datetime

    from steps.lib.money import pacing

    curve = pacing.from_settings(s.pacing, s.pacing_burst_share, s.pacing_curve)
    if curve is None:
        return None
    moment = datetime.fromtimestamp(now, UTC)
    day = moment.strftime("%Y-%m-%d")
    released = curve.allowance(s.daily_ceiling_micros, pacing.seconds_into(day, now))
    return (
        f"pacing: by {moment:%H:%M} UTC {usd(released)} of the {usd(s.daily_ceiling_micros)} "
        f"daily ceiling was released, so spending stopped at {usd(spent)}; the rest comes "
        "through the day (cdk.json pacing, or serve --pacing off)"
    )


def warnings(s: Settings) -> list[str]:
    reserve = largest_reserve_micros(s)
    found = []
    if s.daily_ceiling_micros < reserve:
        found.append(
            f"warning: the daily ceiling {usd(s.daily_ceiling_micros)} is below one "
            f"reservation ({usd(reserve)}): every message gets the degraded answer; raise "
            f"--daily-ceiling-usd to at least {usd(reserve)}"
        )
    elif s.visitor_ceiling_micros < reserve:
        share = Decimal(reserve) / Decimal(s.daily_ceiling_micros)
        found.append(
            f"warning: a visitor's cap ({s.visitor_cost_share} x {usd(s.daily_ceiling_micros)}"
            f" = {usd(s.visitor_ceiling_micros)}) is below one reservation ({usd(reserve)}): "
            f"every visitor's first message gets the degraded answer; raise "
            f"--visitor-cost-share to at least {_round_up(share)} or --daily-ceiling-usd to "
            f"at least {usd(int(Decimal(reserve) / s.visitor_cost_share) + 1)}"
        )
    return found


def _round_up(value: Decimal) -> str:
    """The smallest two-decimal share at or above `value` (at most 1)."""
    hundredths = (value * 100).to_integral_value(rounding=ROUND_CEILING)
    return str(min(Decimal(1), hundredths / 100).quantize(Decimal("0.01")))
