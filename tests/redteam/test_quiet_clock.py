"""Red team on S1's quiet signal (steps/lib/runtime/quiet.py) under a hostile clock: an NTP
step backwards, a forward jump, UTC midnight. The clock is injected; nothing here reads
the machine's time.

The signal must depend only on the clock's distance from this environment's previous
verified request: midnight changes nothing, a step backwards never wakes (a wake is cheap,
but a clock that steps back and forth must not turn a busy site's every message into one),
and every request is recorded whatever the clock did.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from steps.lib.runtime.quiet import QUIET_AFTER_SECONDS, LastSeen

MIDNIGHT = datetime(2026, 11, 30, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_utc_midnight_is_no_quiet_spell() -> None:
    clock = Clock(MIDNIGHT - 1)
    seen = LastSeen(clock)
    assert seen.quiet_then_seen()  # a new environment
    clock.now = MIDNIGHT + 1
    assert not seen.quiet_then_seen()  # two seconds later, on the next UTC day


def test_a_clock_stepping_back_wakes_nothing_and_keeps_the_record() -> None:
    clock = Clock(MIDNIGHT)
    seen = LastSeen(clock)
    seen.quiet_then_seen()
    clock.now -= 3600  # an NTP step an hour back
    assert not seen.quiet_then_seen()
    clock.now += 1
    assert not seen.quiet_then_seen()  # measured from the request just recorded


def test_naive_a_distance_either_way_wakes_on_a_step_back() -> None:
    # The variant that measures |now - last|: a step back reads as a quiet hour.
    clock = Clock(MIDNIGHT)
    last = clock()
    clock.now -= 3600
    assert abs(clock() - last) > QUIET_AFTER_SECONDS


@given(
    start=st.floats(min_value=0, max_value=4e9),
    steps=st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=30),
)
def test_quiet_is_exactly_a_forward_gap_past_the_threshold(
    start: float, steps: list[float]
) -> None:
    clock = Clock(start)
    seen = LastSeen(clock)
    assert seen.quiet_then_seen()
    for step in steps:
        previous = clock.now
        clock.now += step
        # Each request is measured from the one before it, by this clock, whatever it did
        # (the gap as the floats hold it: no flake at the threshold's last bit).
        assert seen.quiet_then_seen() == (clock.now - previous > QUIET_AFTER_SECONDS)
