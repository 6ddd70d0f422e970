"""Conflicts and throttling: the reservation and the settlement retry them with full-jitter
exponential backoff bounded in time (clock, sleep and jitter injected), the settlement
stays idempotent, and a reservation out of retries is a refusal (degraded), not an error."""

from __future__ import annotations

import random
from typing import Any

import pytest
from botocore.exceptions import ClientError

from steps.lib.money import ledger
from steps.lib.runtime import stages
from steps.lib.runtime.errors import DependencyUnavailable, ReconcileError

from .ledger_helpers import DAY, NOW, FakePace, reserve, totals

CONFLICT = [{"Code": "TransactionConflict"}]


def _cancelled(reasons: list[dict[str, str]], operation: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
         "CancellationReasons": reasons},
        operation,
    )  # fmt: skip


class Contending:
    """A real (moto) client whose TransactWriteItems follows a plan, one entry per call:
    "conflict" / "throttle" (nothing written), "lost" (written, then the answer is lost
    as a throttle), None (the emulator answers). Past the plan, the emulator answers."""

    def __init__(self, client: Any, plan: list[str | None], width: int = 5) -> None:
        self._client, self.plan, self.width, self.calls = client, list(plan), width, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def transact_write_items(self, **kwargs: Any) -> Any:
        self.calls += 1
        step = self.plan.pop(0) if self.plan else None
        if step == "conflict":
            n = len(kwargs["TransactItems"])
            raise _cancelled(CONFLICT + [{"Code": "None"}] * (n - 1), "TransactWriteItems")
        if step == "throttle":
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow down"}},
                "TransactWriteItems",
            )
        answer = self._client.transact_write_items(**kwargs)
        if step == "lost":
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}},
                "TransactWriteItems",
            )
        return answer


def test_reserve_retries_conflicts_and_throttles_with_full_jitter(aws):
    # The day's first reservation (it records the shard count), on another visitor's day.
    reserve(aws, "warm", visitor="v0", ceilings=ledger.Ceilings(10**9, 10**9, 10**9))
    before = totals(aws)
    fake = FakePace()
    client = Contending(aws.dynamodb, ["conflict", "throttle", "conflict"])
    out = ledger.reserve(
        client, aws.table, request_id="r1", visitor="v1", day=DAY, micros=100,
        ceilings=ledger.Ceilings(10**6, 10**6, 10**6), now=NOW, pace=fake.pace,
    )  # fmt: skip
    assert isinstance(out, ledger.Reservation) and client.calls == 4
    b = ledger.RESERVATION_BACKOFF
    expected = [d * min(b.cap_seconds, b.base_seconds * 2**n) for n, d in enumerate(fake.draws, 1)]
    assert fake.sleeps == pytest.approx(expected) and len(fake.sleeps) == 3
    assert totals(aws) == (before[0] + 100, before[1] + 100, 100)  # written once


def test_reserve_out_of_retries_is_a_contention_refusal_within_its_budget(aws):
    fake = FakePace()
    client = Contending(aws.dynamodb, ["conflict"] * 1000)
    out = ledger.reserve(
        client, aws.table, request_id="r1", visitor="v1", day=DAY, micros=100,
        ceilings=ledger.Ceilings(10**6, 10**6, 10**6), now=NOW, pace=fake.pace,
    )  # fmt: skip
    assert out == ledger.Refusal("contention")
    assert sum(fake.sleeps) <= ledger.RESERVATION_BACKOFF.budget_seconds
    assert client.calls > 5  # it did keep trying
    assert aws.count_items() == 0  # nothing was written


def test_a_condition_refusal_is_not_retried_even_beside_a_conflict(aws):
    class Mixed(Contending):
        def transact_write_items(self, **kwargs: Any) -> Any:
            self.calls += 1
            # the day refused on its ceiling (its old item carries the recorded count)
            day = {"Code": "ConditionalCheckFailed", "Item": {"shards": {"N": "1"}}}
            reasons = [day, *CONFLICT] + [{"Code": "None"}] * 3
            raise _cancelled(reasons, "TransactWriteItems")

    client = Mixed(aws.dynamodb, [])
    assert reserve(aws, "r", client=client) == ledger.Refusal("ceiling")
    assert client.calls == 1


def test_settle_retries_a_conflict_and_lands_once(aws):
    r = reserve(aws, "r1", 1000)
    fake = FakePace()
    client = Contending(aws.dynamodb, ["conflict", "conflict", "throttle"])
    out = ledger.reconcile(client, aws.table, r, actual_micros=300, now=NOW, pace=fake.pace)
    assert out == ledger.Settlement("settled", 300, 700) and client.calls == 4
    assert totals(aws) == (300, 300, 300)


def test_a_settle_whose_answer_was_lost_is_found_settled_on_retry(aws):
    r = reserve(aws, "r1", 1000)
    client = Contending(aws.dynamodb, ["lost"])
    out = ledger.reconcile(client, aws.table, r, actual_micros=300, now=NOW, pace=FakePace().pace)
    assert out.status == "already_settled"
    assert totals(aws) == (300, 300, 300)  # moved exactly once
    assert aws.item("GLOBAL", DAY)["settledMicros"]["N"] == "300"


def test_a_settle_out_of_retries_raises_and_the_reservation_stands(aws):
    r = reserve(aws, "r1", 1000)
    fake = FakePace()
    client = Contending(aws.dynamodb, ["conflict"] * 1000)
    with pytest.raises(ReconcileError, match="not settled"):
        ledger.reconcile(client, aws.table, r, actual_micros=300, now=NOW, pace=fake.pace)
    assert sum(fake.sleeps) <= ledger.SETTLE_BACKOFF.budget_seconds
    assert totals(aws) == (1000, 1000, 1000)  # over-counts, never under
    assert aws.item("RES#r1", "RES")["status"]["S"] == "open"


def test_an_outage_during_settlement_is_not_retried(aws):
    r = reserve(aws, "r1", 1000)

    class Down(Contending):
        def transact_write_items(self, **kwargs: Any) -> Any:
            self.calls += 1
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "T")

    client = Down(aws.dynamodb, [])
    with pytest.raises(DependencyUnavailable):
        ledger.reconcile(client, aws.table, r, actual_micros=1, now=NOW, pace=FakePace().pace)
    assert client.calls == 1


def test_the_jitter_is_drawn_at_call_time_from_the_os(aws, monkeypatch):
    # SnapStart restores many containers from one INIT snapshot: a generator seeded there
    # would hand them all the same waits. The ledger holds none; each call makes its own.
    assert not any(isinstance(v, random.Random) for v in vars(ledger).values())
    made = []
    real = random.SystemRandom

    def counting() -> random.SystemRandom:
        made.append(1)
        return real()

    reserve(aws, "warm")  # the day's first reservation (it records the shard count)
    monkeypatch.setattr(random, "SystemRandom", counting)
    sleeps: list[float] = []
    pace = ledger.Pace(sleep=sleeps.append)
    for i in range(2):
        client = Contending(aws.dynamodb, ["conflict"])
        ledger.reserve(
            client, aws.table, request_id=f"r{i}", visitor="v", day=DAY, micros=1,
            ceilings=ledger.Ceilings(10**6, 10**6, 10**6), now=NOW, pace=pace,
        )  # fmt: skip
    assert len(made) == 2 and len(sleeps) == 2


@pytest.mark.parametrize(
    ("state", "backoff"),
    [("CostGate", ledger.RESERVATION_BACKOFF), ("Reconcile", ledger.SETTLE_BACKOFF)],
)
def test_each_retry_budget_fits_well_inside_its_step_timeout(state, backoff):
    # Half the timeout at most: the rest is for a cold start and the last attempt itself.
    assert backoff.budget_seconds <= stages.BY_STATE[state].timeout_seconds / 2
