"""S3 CostGate: reserve the worst case of this message on day, month and visitor, or refuse.

The reserve is sized for this request (pricing.reserve_for: the system prompt and the
message at their byte bound, room for history and grounding, maxTokens of output). One
DynamoDB transaction does both the operator-mode check and the reservation; only a refused
mode check costs a second read (to tell degraded from off). A day this container saw spent
is refused from memory, without a write (spent_memo.py); conflicts and throttling are
retried, then answered degraded (reason "contention"), never with a 503. With pacing on,
the day's ceiling is what the curve has released by this step's clock (pacing.py); a
refusal by pacing alone is degraded with reason "paced" and the time more is released.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from steps.lib.money import ledger, pacing, pricing, spent_memo
from steps.lib.providers import model_ids
from steps.lib.runtime import clients, init_phase, observability
from steps.lib.runtime.settings import settings
from steps.lib.text import prompt

init_phase.at_init(clients.dynamodb)  # INIT phase on Lambda; no-op elsewhere

OFF = "The chat is switched off for now. Everything it knows is on this site's pages."


@observability.instrumented("CostGate")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s, now, db = settings(), time.time(), clients.dynamodb()
    ceilings = ledger.Ceilings(
        s.daily_ceiling_micros, s.monthly_ceiling_micros, s.visitor_ceiling_micros,
        s.ceiling_shards,
    )  # fmt: skip
    request = event["request"]
    reserve = pricing.reserve_for(
        s, request["message"], request.get("history") or [],
        bare_system=prompt.system_text([]),
        metering=model_ids.metering_for(s, os.environ.get("AWS_REGION")),
    )  # fmt: skip
    micros = reserve.micros
    outcome = ledger.reserve(
        db, s.table_name, request_id=event["requestId"], visitor=event["visitor"],
        day=event["day"], micros=micros, ceilings=ceilings, now=now,
        memo=spent_memo.CONTAINER,
        pacing=pacing.from_settings(s.pacing, s.pacing_burst_share, s.pacing_curve),
    )  # fmt: skip
    if isinstance(outcome, ledger.Reservation):
        observability.decision(
            "reserved", visitor=outcome.visitor, reserved_micros=micros,
            input_tokens=reserve.input_tokens,
        )  # fmt: skip
        return {"decision": "reserved", "reservation": _wire(outcome)}
    if outcome.reason == "mode" and ledger.read_mode(db, s.table_name, now=now) == "off":
        observability.decision("off")
        return {
            "decision": "off",
            "response": {
                "statusCode": 200,
                "body": {"reply": OFF, "degraded": True, "off": True, "sources": []},
            },
        }
    observability.decision("degraded", reason=outcome.reason, visitor=event["visitor"])
    # releasedAt is always there (null unless paced): the ASL passes it on to Degraded.
    return {"decision": "degraded", "reason": outcome.reason,
            "releasedAt": _iso(outcome.released_at)}  # fmt: skip


def _iso(moment: float | None) -> str | None:
    """When pacing releases room for this reserve (S3's clock; UTC, to the minute, up)."""
    if moment is None:
        return None
    minute = -(-int(moment) // 60) * 60
    return datetime.fromtimestamp(minute, UTC).strftime("%Y-%m-%dT%H:%MZ")


def _wire(r: ledger.Reservation) -> dict[str, Any]:
    return {
        "id": r.id,
        "reservedMicros": r.reserved_micros,
        "day": r.day,
        "month": r.month,
        "visitor": r.visitor,
        "shard": r.shard,
    }
