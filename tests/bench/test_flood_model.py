"""The flood model's own checks: its overshoot measure can fail, and the options it models
(retry policy, memo, shards) behave as docs/scaling.md says. Seeded, so deterministic."""

from __future__ import annotations

from dataclasses import replace

import pytest

from steps.lib.runtime.settings import Settings
from tests.bench import flood

DAY = Settings().daily_ceiling_micros


@pytest.fixture(autouse=True)
def short_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flood, "ARRIVAL_SECONDS", 2.0)


def test_conditional_reservations_never_pass_the_ceiling_and_the_naive_reference_does():
    for policy in (flood.AS_SHIPPED, flood.RETRY_THEN_DEGRADE):
        row = flood.simulate(policy, 100, DAY)
        assert row["held_over"] == row["overshoot"] == row["under_counted"] == 0
    assert flood.simulate(flood.NAIVE, 100, DAY)["held_over"] > 0


def test_retrying_turns_the_503s_of_a_flood_into_degraded_answers():
    shipped = flood.simulate(flood.AS_SHIPPED, 10, DAY)
    retried = flood.simulate(flood.RETRY_THEN_DEGRADE, 10, DAY)
    assert shipped["failed_share"] > 0.5
    assert retried["failed_share"] == 0 and retried["degraded_share"] > 0.9


def test_the_memo_answers_a_spent_day_without_writes_and_shards_add_room():
    memo = replace(flood.RETRY_THEN_DEGRADE, memo_seconds=5.0)
    without = flood.simulate(flood.RETRY_THEN_DEGRADE, 10, DAY)
    with_memo = flood.simulate(memo, 10, DAY)
    assert with_memo["counts"].get("degraded (memo, no write)", 0) > 0
    assert with_memo["writes_per_s"] < without["writes_per_s"]
    room = 10_000 * DAY
    sharded = replace(flood.RETRY_THEN_DEGRADE, shards=4)
    assert (
        flood.simulate(sharded, 10, room)["answered_per_s"]
        > flood.simulate(flood.RETRY_THEN_DEGRADE, 10, room)["answered_per_s"]
    )
    assert flood.simulate(sharded, 100, DAY)["overshoot"] == 0


def test_the_simulated_day_keeps_the_evening_answering_only_with_pacing():
    # A 10x burst at 09:00: unpaced, the day is spent before 20:00; paced, 20:00-21:00 is
    # answered, and no paced day admits past the ceiling (spent <= 100 %).
    _, burst, demand = flood.day_scenarios()[-1]
    off = flood.simulate_day(burst, None, demand)
    assert off.evening_answered == 0 and off.spent_out > 0 and off.paced == 0
    for _, curve in flood.day_curves()[1:]:
        on = flood.simulate_day(burst, curve, demand)
        assert on.evening_answered == 1 and on.spent_out == 0 and on.spent_share <= 1
    # A normal day: pacing refuses nothing.
    _, hours, demand = flood.day_scenarios()[0]
    assert all(flood.simulate_day(hours, c, demand).paced == 0 for _, c in flood.day_curves())
