"""Pacing: how much of the day's ceiling is released by each second of the UTC day.

``allowance(t) = ceiling x min(1, burst + (1 - burst) x W(t))``, where ``W(t)`` is the share
of the day's traffic that has arrived by ``t``: ``t / 24 h`` for a flat curve, or the
operator's 24 hourly weights, summed up to ``t`` (linear within an hour). At 00:00 the
burst share is released, at 24:00 the whole ceiling. S3 puts ``allowance(now)`` in place
of the day's ceiling in the reservation's condition (ledger_items.reservation_items), so
a busy morning can spend only what the curve has released, and the rest of the day keeps
budget to answer.

Why it cannot break the cap: ``W(t) <= 1``, so ``allowance(t) <= ceiling``, rounded down
to integer micro-USD; the condition is only ever stricter than the unpaced one. The time
``t`` is S3's clock at the reservation, measured from the start of the reservation's own
UTC day (clamped to [0, 24 h]): 23:59:59 is near the end of one day's curve, 00:00:00 the
start of the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction

DAY_SECONDS = 86_400
HOUR_SECONDS = 3_600
FLAT: tuple[int, ...] = (1,) * 24
_ASCII_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Curve:
    """The release curve: ``burst`` in [0, 1] at 00:00, then ``weights`` (24, hourly)."""

    burst: Fraction
    weights: tuple[int, ...] = FLAT

    def __post_init__(self) -> None:
        if not 0 <= self.burst <= 1:
            raise ValueError(f"burst share must be in [0, 1], not {self.burst}")
        if len(self.weights) != 24 or min(self.weights) < 0 or sum(self.weights) <= 0:
            raise ValueError("the curve takes 24 hourly weights >= 0, not all zero")

    def released(self, seconds: int) -> Fraction:
        """The share of the ceiling released ``seconds`` into the day, in [burst, 1]."""
        seconds = min(max(seconds, 0), DAY_SECONDS)
        hour, within = divmod(seconds, HOUR_SECONDS)
        arrived = Fraction(sum(self.weights[:hour]))
        if hour < 24:
            arrived += Fraction(self.weights[hour] * within, HOUR_SECONDS)
        share = self.burst + (1 - self.burst) * arrived / sum(self.weights)
        return min(Fraction(1), share)

    def allowance(self, ceiling: int, seconds: int) -> int:
        """Integer micro-USD of ``ceiling`` released by then, rounded down (<= ceiling)."""
        return int(ceiling * self.released(seconds))  # int() of a Fraction >= 0: floor

    def released_at(self, ceiling: int, need: int) -> int | None:
        """The first second of the day at which ``allowance >= need`` (None: never)."""
        if need > ceiling:
            return None
        low, high = 0, DAY_SECONDS  # allowance is non-decreasing in time: bisect
        while low < high:
            mid = (low + high) // 2
            if self.allowance(ceiling, mid) >= need:
                high = mid
            else:
                low = mid + 1
        return low


def day_start(day: str) -> float:
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()


def seconds_into(day: str, now: float) -> int:
    """Whole seconds from the start of ``day`` (UTC) to ``now``, clamped to the day."""
    return min(max(int(now - day_start(day)), 0), DAY_SECONDS)


def parse_curve(text: str) -> tuple[int, ...]:
    """``""`` (flat) or 24 comma-separated hourly weights, e.g. page views per UTC hour.

    Each weight is ASCII digits (spaces around it allowed). Python's ``int`` and
    ``str.isdigit`` take more (``int("٣")`` is 3, ``"²".isdigit()`` is True but ``int``
    refuses it, ``int("1_0")`` is 10): settings, synth, ``serve`` and S3 all parse here, so
    what the settings check accepts is exactly what S3 can use.
    """
    if not text.strip():
        return FLAT
    parts = [part.strip(" ") for part in text.split(",")]
    if not all(_ASCII_DIGITS.fullmatch(part) for part in parts):
        raise ValueError("pacing_curve takes 24 comma-separated whole numbers (digits 0-9)")
    weights = tuple(int(part) for part in parts)
    if len(weights) != 24 or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError("pacing_curve takes 24 hourly weights >= 0, not all zero")
    return weights


def from_settings(pacing: str, burst_share: object, curve: str) -> Curve | None:
    """The curve the settings ask for, or None with pacing off."""
    if pacing != "on":
        return None
    return Curve(Fraction(str(burst_share)), parse_curve(curve))
