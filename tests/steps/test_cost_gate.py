"""S3, cost_gate: the reservation on day, month and visitor, and the operator mode,
with the wire shapes of docs/internals.md."""

from __future__ import annotations

import pytest

from steps import cost_gate
from steps.lib.money import pricing
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
    assert second == {"decision": "degraded", "reason": "ceiling"}
    assert aws.item("RES#other", "RES") is None


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
