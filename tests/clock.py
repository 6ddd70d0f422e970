"""Pinned instants for tests that touch the calendar: no test reads the real date.

Each instant is one the calendar makes hard: the money and quota items are keyed by UTC day
and month, so the day after the last day of a month is also a new month, and the second
before midnight on the last day of a year is the end of a day, a month and a year at once.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest


def at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


INSTANTS = {
    "mid-month noon": at("2026-11-15 12:00:00"),
    "last day of a month, noon": at("2026-11-30 12:00:00"),
    "last second of a year": at("2026-12-31 23:59:59"),
    "leap day, noon": at("2028-02-29 12:00:00"),
}


def pin(monkeypatch: pytest.MonkeyPatch, instant: float) -> None:
    """Freeze the wall clock every step reads (time.time) at ``instant``."""
    import time

    monkeypatch.setattr(time, "time", lambda: instant)
