"""S6 Reconcile: settle the reservation to what the message actually cost, at most once.

Three callers in the state machine: after an answer (``usage`` from S5); as
ReleaseReservation when S4 or S5 failed before the model call (``release: true``): then no
model call was made and the reservation settles at the query embedding's bound, the only
thing that may have been billed; and as ReleaseCutReservation when S3 itself failed (no
``reservation``: S3's output never came back), which finds the reservation by the request
id, if S3 made one, and releases it the same way.
"""

from __future__ import annotations

import time
from typing import Any

from steps.lib.money import ledger, pricing
from steps.lib.runtime import clients, init_phase, observability, wake
from steps.lib.runtime.settings import settings

init_phase.at_init(clients.dynamodb)  # INIT phase on Lambda; no-op elsewhere


@wake.answers_wake  # the wake starts this environment and nothing else
@observability.instrumented("Reconcile")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s = settings()
    if "reservation" not in event:  # S3 failed: its output, the reservation, never came back
        return _release_by_request(s, event["requestId"])
    r = event["reservation"]
    reservation = ledger.Reservation(
        r["id"], int(r["reservedMicros"]), r["day"], r["month"], r["visitor"],
        int(r.get("shard", 0)),  # absent in a reservation made before shards existed
    )  # fmt: skip
    if event.get("release") is True:
        actual = pricing.release_micros(s)
    else:
        actual = max(  # S5 priced it too: during a deploy the two may hold different prices
            pricing.actual_micros(
                s,
                event["usage"],
                int(event.get("embeddingTokens") or 0),
                int(event.get("guardrailTextUnits") or 0),
            ),
            int(event.get("invokeCostMicros") or 0),
        )
    settled = ledger.reconcile(
        clients.dynamodb(), s.table_name, reservation, actual_micros=actual, now=time.time()
    )
    return _reply(
        settled, released=event.get("release") is True, visitor=reservation.visitor,
        reserved_micros=reservation.reserved_micros,
    )  # fmt: skip


def _release_by_request(s: Any, request_id: str) -> dict[str, Any]:
    """CostGate failed (cut at its Lambda timeout after its transaction landed, say): the
    reservation it may have made is found by the request id and released, or the id is
    voided so a transaction still in flight cannot land (ledger.release_by_request)."""
    settled = ledger.release_by_request(
        clients.dynamodb(),
        s.table_name,
        request_id=request_id,
        actual_micros=pricing.release_micros(s),
        now=time.time(),
    )
    return _reply(settled, released=True)


def _reply(settled: ledger.Settlement, *, released: bool, **logged: Any) -> dict[str, Any]:
    """The step's log line and output: a release that settled says "released"."""
    decision = "released" if released and settled.status == "settled" else settled.status
    observability.decision(
        decision, cost_micros=settled.actual_micros, released_micros=settled.released_micros,
        **logged,
    )  # fmt: skip
    return {
        "actualMicros": settled.actual_micros,
        "releasedMicros": settled.released_micros,
        "status": settled.status,
    }
