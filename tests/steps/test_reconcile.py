"""S6, reconcile: settling a reservation once, on the day and month it reserved, with
the wire shapes of docs/internals.md."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from steps import cost_gate, quota, reconcile
from steps.lib.money import ledger, pricing
from steps.lib.runtime.settings import Settings

from .conftest import load_event

# conftest pins the clock to noon on 2026-11-29, the canned events' day.


def _reserve_for(event: dict[str, Any]) -> None:
    r = event["reservation"]
    s = Settings()
    ceilings = ledger.Ceilings(
        s.daily_ceiling_micros, s.monthly_ceiling_micros, s.visitor_ceiling_micros
    )
    import boto3

    outcome = ledger.reserve(
        boto3.client("dynamodb"),
        s.table_name,
        request_id=r["id"],
        visitor=r["visitor"],
        day=r["day"],
        micros=r["reservedMicros"],
        ceilings=ceilings,
        now=0,
    )
    assert isinstance(outcome, ledger.Reservation)


def test_reconcile_settles_to_the_actual_cost_once(aws):
    event = load_event("reconcile")
    _reserve_for(event)
    out = reconcile.handler(copy.deepcopy(event), None)
    actual = pricing.actual_micros(Settings(), event["usage"], 12, 0)
    reserved = event["reservation"]["reservedMicros"]
    assert out == {"actualMicros": actual, "releasedMicros": reserved - actual, "status": "settled"}
    assert aws.cost("GLOBAL", "2026-11-29") == actual
    again = reconcile.handler(copy.deepcopy(event), None)
    assert again["status"] == "already_settled" and again["releasedMicros"] == 0
    assert aws.cost("GLOBAL", "2026-11-29") == actual
    assert aws.cost("GLOBAL", "MONTH#2026-11") == actual
    assert aws.cost("VISITOR#5d1c0b7a9e3f2468", "2026-11-29") == actual


def test_a_message_reserved_before_midnight_settles_on_the_day_and_month_it_reserved(
    aws, monkeypatch
):
    import time as clock

    before, after = 1_769_903_999.0, 1_769_904_005.0  # 2026-01-31 23:59:59, 02-01 00:00:05 UTC
    monkeypatch.setattr(clock, "time", lambda: before)
    q = quota.handler({"requestId": "r-midnight", "viewerAddress": "192.0.2.20:443"}, None)
    request = load_event("cost_gate")["request"]
    gate = cost_gate.handler(
        {"requestId": "r-midnight", "visitor": q["visitor"], "day": q["day"], "request": request},
        None,
    )
    monkeypatch.setattr(clock, "time", lambda: after)
    event = load_event("reconcile")
    event["reservation"] = gate["reservation"]
    out = reconcile.handler(event, None)
    assert out["status"] == "settled" and q["day"] == "2026-01-31"
    visitor = f"VISITOR#{q['visitor']}"
    for pk, sk in (("GLOBAL", "2026-01-31"), ("GLOBAL", "MONTH#2026-01"), (visitor, q["day"])):
        assert aws.cost(pk, sk) == out["actualMicros"]
    for pk, sk in (("GLOBAL", "2026-02-01"), ("GLOBAL", "MONTH#2026-02")):
        assert aws.item(pk, sk) is None


def test_reconcile_of_an_unknown_reservation_raises(aws):
    from steps.lib.runtime.errors import ReconcileError

    with pytest.raises(ReconcileError):
        reconcile.handler(load_event("reconcile"), None)
    assert aws.cost("GLOBAL", "2026-11-29") == 0
