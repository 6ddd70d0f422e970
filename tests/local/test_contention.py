"""Contention end to end, on the real ASL: conflicts and throttles injected into DynamoDB
transactions (local/engine/wire.py) are retried; a reservation out of retries is a degraded answer
(no model call, not a 503); a settlement retries until it lands; a real outage still
fails closed."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from local.engine.runtime import LocalRuntime
from local.engine.wire import Contention, error_response
from steps.lib.money import ledger

from .conftest import QUESTION, reservations

EVERY_GLOBAL_ITEM = Contention(rate=0.0, seed=3, rates={"GLOBAL": 1.0})
# Half of the reservation items meet a conflict: some settlements need several attempts.
RESERVATIONS = Contention(rate=0.0, seed=5, codes=("TransactionConflict",), rates={"RES#": 0.5})


def test_a_reservation_out_of_retries_is_answered_degraded_not_503(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    runtime = make_runtime(contention=EVERY_GLOBAL_ITEM)
    outcome = runtime.send(QUESTION, ip="198.51.100.7")
    assert outcome.status == 200 and outcome.body.get("degraded") is True
    assert [s.state for s in outcome.steps] == ["OriginVerify", "Quota", "CostGate", "Degraded"]
    assert runtime.model_calls == 0 and reservations(runtime) == []
    attempts = runtime.wire.counts()["dynamodb", "TransactWriteItems"]
    assert attempts > 3 and runtime.wire.injected()["TransactionConflict"] > 0


def test_a_real_outage_at_the_reservation_still_fails_closed(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    runtime = make_runtime()
    failing = error_response(500, "InternalServerError")
    with runtime.wire.fault("dynamodb", failing, ["TransactWriteItems"]):
        outcome = runtime.send(QUESTION, ip="198.51.100.7")
    assert outcome.status == 503 and runtime.model_calls == 0


def test_a_slower_machine_makes_the_same_number_of_attempts(
    make_runtime: Callable[..., LocalRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retries here count their budget on conftest's RetryClock: a machine that takes
    0.2 s longer per attempt makes exactly as many, so no assertion in this module depends
    on the machine's speed. On the real clock (the naive harness) that slowness costs
    attempts."""
    runtime = make_runtime(contention=EVERY_GLOBAL_ITEM)
    once = ledger._reservation_attempt

    def slow_attempt(*args: object) -> object:
        time.sleep(0.2)
        return once(*args)

    def attempts(slow: bool, pace: ledger.Pace | None = None) -> int:
        if pace is not None:
            monkeypatch.setitem(ledger.reserve.__kwdefaults__, "pace", pace)
        if slow:
            monkeypatch.setattr(ledger, "_reservation_attempt", slow_attempt)
        before = runtime.wire.counts()["dynamodb", "TransactWriteItems"]
        outcome = runtime.send(QUESTION, ip=f"198.51.100.{11 + before}")
        assert outcome.body.get("degraded") is True
        monkeypatch.setattr(ledger, "_reservation_attempt", once)
        return runtime.wire.counts()["dynamodb", "TransactWriteItems"] - before

    fast = attempts(slow=False)
    assert attempts(slow=True) == fast > 3
    assert attempts(slow=True, pace=ledger.Pace()) < fast


@pytest.mark.parametrize("retrying", [True, False], ids=["as built", "naive: no settle retry"])
def test_every_settlement_lands_under_contention(
    make_runtime: Callable[..., LocalRuntime], monkeypatch: pytest.MonkeyPatch, retrying: bool
) -> None:
    if not retrying:  # the settlement as it was before: one attempt, a conflict loses it
        monkeypatch.setattr(ledger, "SETTLE_BACKOFF", ledger.Backoff(budget_seconds=0.0))
    runtime = make_runtime(contention=RESERVATIONS)
    outcomes = [runtime.send(QUESTION, ip=f"198.51.100.{i + 1}") for i in range(8)]
    assert {o.status for o in outcomes} == {200}
    answered = [o for o in outcomes if "sig" in o.body]
    statuses = [r["status"]["S"] for r in reservations(runtime)]
    assert len(statuses) == len(answered) > 0
    if retrying:
        assert set(statuses) == {"settled"}
    else:
        assert "open" in statuses  # a lost settlement leaves its whole reserve standing


def test_a_release_under_contention_retries_until_it_lands(
    make_runtime: Callable[..., LocalRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ReleaseReservation (S4 failed before any model call) is the same settlement, with
    # release: true; every settlement item meets a conflict half the time.
    from steps.lib.money import pricing
    from steps.lib.providers import models
    from steps.lib.runtime.errors import EmbeddingError

    class Failing:
        def __init__(self, s: object) -> None:
            self.id = "failing"

        def embed_query(self, text: str) -> object:
            raise EmbeddingError("Titan embedding failed: ThrottlingException")

    runtime = make_runtime(contention=RESERVATIONS)
    monkeypatch.setattr(models, "query_embedder", Failing)
    for i in range(4):
        outcome = runtime.send(QUESTION, ip=f"198.51.100.{i + 1}")
        assert outcome.status == 503 and runtime.model_calls == 0
        assert [s.state for s in outcome.steps][-2:] == ["Reconcile", "FailClosed"]
    assert {r["status"]["S"] for r in reservations(runtime)} == {"settled"}
    assert runtime.wire.injected()["TransactionConflict"] > 0
    release = pricing.release_micros(runtime.settings)
    assert all(int(r["actualMicros"]["N"]) == release for r in reservations(runtime))
