"""S3, cost_gate: the reservation on day, month and visitor, and the operator mode,
with the wire shapes of docs/internals.md."""

from __future__ import annotations

import pytest

from steps import cost_gate
from steps.lib.money import pricing
from steps.lib.runtime import caches
from steps.lib.runtime.settings import Settings
from steps.lib.text import prompt

from .conftest import load_event

# conftest pins the clock to noon on 2026-11-29, the canned events' day.


def test_cost_gate_reserves_the_worst_case_on_day_month_and_visitor(aws):
    event = load_event("cost_gate")
    out = cost_gate.handler(event, None)
    # Offline (no CountTokens) the reserve holds grounding by its bytes: metering "bytes".
    reserve = pricing.reserve_for(
        Settings(), event["request"]["message"], [],
        bare_system=prompt.system_text([]), metering="bytes",
    ).micros  # fmt: skip
    assert out == {
        "decision": "reserved",
        "reservation": {
            "id": event["requestId"],
            "reservedMicros": reserve,
            "day": "2026-11-29",
            "month": "2026-11",
            "visitor": "5d1c0b7a9e3f2468",
            "shard": 0,
        },
    }
    assert aws.cost("GLOBAL", "2026-11-29") == reserve
    assert aws.cost("GLOBAL", "MONTH#2026-11") == reserve
    assert aws.cost("VISITOR#5d1c0b7a9e3f2468", "2026-11-29") == reserve
    assert aws.item(f"RES#{event['requestId']}", "RES")["status"]["S"] == "open"


def test_cost_gate_degrades_when_the_daily_ceiling_is_reached(aws, monkeypatch):
    monkeypatch.setenv("CHATGUARD_DAILY_CEILING_USD", "0.012")  # one reserve fits, not two
    monkeypatch.setenv("CHATGUARD_VISITOR_COST_SHARE", "1")
    first = cost_gate.handler(load_event("cost_gate"), None)
    second = cost_gate.handler(load_event("cost_gate") | {"requestId": "other"}, None)
    assert first["decision"] == "reserved"
    assert second == {"decision": "degraded", "reason": "ceiling", "releasedAt": None}
    assert aws.item("RES#other", "RES") is None


def test_cost_gate_paces_the_day_by_its_own_clock_and_says_when_more_is_released(aws, monkeypatch):
    # Noon, burst share 0.5, flat: 0.5 + 0.5 x 12/24 = 75 % of $0.03 is released (22,500
    # micro-USD): two reserves of 8,721 fit, a third (26,163) fits the ceiling, not yet the
    # allowance. It is released when 0.5 + 0.5 x t/24h >= 26,163 / 30,000: t = 17:51:39,
    # said to the minute, rounded up. A time in the event (a client's) is not read.
    monkeypatch.setenv("CHATGUARD_DAILY_CEILING_USD", "0.03")
    monkeypatch.setenv("CHATGUARD_VISITOR_COST_SHARE", "1")
    outs = [cost_gate.handler(load_event("cost_gate") | {"requestId": f"r{i}", "now": 0}, None)
            for i in range(3)]  # fmt: skip
    assert [o["decision"] for o in outs] == ["reserved", "reserved", "degraded"]
    assert outs[2] == {"decision": "degraded", "reason": "paced",
                       "releasedAt": "2026-11-29T17:52Z"}  # fmt: skip
    assert aws.cost("GLOBAL", "2026-11-29") == 2 * 8721 <= 22_500
    monkeypatch.setenv("CHATGUARD_PACING", "off")  # the unpaced ledger admits it
    caches.reset_all()
    assert cost_gate.handler(load_event("cost_gate") | {"requestId": "r3"}, None)["decision"] == (
        "reserved"
    )


@pytest.mark.parametrize(("mode", "decision"), [("degraded", "degraded"), ("off", "off")])
def test_cost_gate_obeys_the_operator_mode_without_reserving(aws, mode, decision):
    aws.set_mode(mode)
    out = cost_gate.handler(load_event("cost_gate"), None)
    assert out["decision"] == decision
    if mode == "off":
        assert out["response"]["statusCode"] == 200
        assert out["response"]["body"]["degraded"] is True
        assert out["response"]["body"]["sources"] == []
    else:
        assert out["reason"] == "mode"
    assert aws.cost("GLOBAL", "2026-11-29") == 0


def test_cost_gate_mode_switch_applies_to_the_very_next_message(aws):
    assert cost_gate.handler(load_event("cost_gate"), None)["decision"] == "reserved"
    aws.set_mode("off")
    assert (
        cost_gate.handler(load_event("cost_gate") | {"requestId": "b"}, None)["decision"] == "off"
    )
    aws.set_mode("normal")
    assert (
        cost_gate.handler(load_event("cost_gate") | {"requestId": "c"}, None)["decision"]
        == "reserved"
    )
