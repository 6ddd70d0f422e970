"""Sharded ceilings (``ceiling_shards`` = N): N day/month item pairs of ceiling // N each on
their own partition keys; a request reserves on its shard and tries the others when it is
spent; settlement goes to the shard reserved; the hard cap holds on the sum, and what a
refusal leaves unused is at most N x (reserve - 1) (plus the N-1 micro-USD of rounding)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from local.engine.tables import create_ledger_table
from steps.lib.money import ledger
from tests.steps.conftest import Serialised

from .ledger_helpers import race

DAY, MONTH = "2026-11-29", "2026-11"
NOW = 1_764_400_000.0


def _reserve(aws, request_id, micros, ceilings, *, table=None, client=None, visitor="v"):
    return ledger.reserve(
        client or aws.dynamodb, table or aws.table, request_id=request_id, visitor=visitor,
        day=DAY, micros=micros, ceilings=ceilings, now=NOW,
    )  # fmt: skip


def _day_totals(aws, shards, table=None):
    table = table or aws.table
    return [ledger.read_cost(aws.dynamodb, table, ledger.day_key(DAY, k), now=NOW)
            for k in range(shards)]  # fmt: skip


def test_requests_spread_over_the_shards_and_settle_on_the_one_they_reserved(aws):
    ceilings = ledger.Ceilings(3000, 3000, 10**6, shards=3)
    made = [_reserve(aws, f"r{i}", 10, ceilings) for i in range(30)]
    assert {r.shard for r in made} == {0, 1, 2}
    r = made[0]
    assert r.shard == ledger.shard_order(r.id, 3)[0]  # its own shard first, from its id
    record = aws.item(f"RES#{r.id}", "RES")
    assert record["shard"]["N"] == str(r.shard)
    before = _day_totals(aws, 3)
    ledger.reconcile(aws.dynamodb, aws.table, r, actual_micros=4, now=NOW)
    after = _day_totals(aws, 3)
    assert [a - b for a, b in zip(after, before, strict=True)] == [
        -6 if k == r.shard else 0 for k in range(3)
    ]
    month = ledger.read_cost(aws.dynamodb, aws.table, ledger.month_key(MONTH, r.shard), now=NOW)
    assert month == after[r.shard]


def test_a_request_whose_shard_is_spent_tries_the_others(aws):
    ceilings = ledger.Ceilings(3000, 3000, 10**6, shards=3)
    own = ledger.shard_order("late", 3)[0]
    filler = next(f"f{i}" for i in range(100) if ledger.shard_order(f"f{i}", 3)[0] == own)
    assert _reserve(aws, filler, 1000, ceilings).shard == own  # its shard, now full
    late = _reserve(aws, "late", 600, ceilings)
    assert isinstance(late, ledger.Reservation) and late.shard == ledger.shard_order("late", 3)[1]


def test_all_shards_spent_is_a_ceiling_refusal_and_the_sum_holds(aws):
    ceilings = ledger.Ceilings(3001, 10**6, 10**6, shards=3)  # 1000 per shard, 1 rounded off
    results = [_reserve(aws, f"r{i}", 400, ceilings) for i in range(10)]
    admitted = [r for r in results if isinstance(r, ledger.Reservation)]
    assert len(admitted) == 6  # two per shard: 800 of 1000 each
    assert results[-1] == ledger.Refusal("ceiling")
    assert sum(_day_totals(aws, 3)) == 2400 <= ceilings.day
    # What is left unused: 3 x 200, within 3 x (400 - 1) + 1 of rounding.
    assert ceilings.day - sum(_day_totals(aws, 3)) <= 3 * (400 - 1) + ceilings.day % 3


def test_a_reserve_larger_than_a_shard_is_refused_up_front(aws):
    ceilings = ledger.Ceilings(3000, 10**6, 10**6, shards=3)
    assert _reserve(aws, "big", 1001, ceilings) == ledger.Refusal("ceiling")
    assert aws.count_items() == 0


def test_the_visitor_cap_is_not_sharded(aws):
    ceilings = ledger.Ceilings(3000, 10**6, 500, shards=3)
    assert isinstance(_reserve(aws, "a", 400, ceilings), ledger.Reservation)
    assert _reserve(aws, "b", 400, ceilings) == ledger.Refusal("ceiling")


@pytest.mark.parametrize("shards", [2, 4])
def test_64_concurrent_reservations_never_pass_the_summed_ceiling(aws, shards):
    client = Serialised(aws.dynamodb)
    ceilings = ledger.Ceilings(10_500, 10**6, 10**6, shards=shards)
    outcomes = race(lambda i: _reserve(aws, f"r{i}", 1000, ceilings, client=client))
    admitted = [o for o in outcomes if isinstance(o, ledger.Reservation)]
    per_shard = ceilings.day_shard // 1000
    assert len(admitted) == shards * per_shard  # every shard filled, none past its share
    assert sum(_day_totals(aws, shards)) == 1000 * len(admitted) <= ceilings.day


operation = st.one_of(
    st.tuples(st.just("reserve"), st.integers(1, 900)),
    st.tuples(st.just("reserve"), st.integers(1, 900)),
    st.tuples(st.just("settle"), st.integers(0, 40), st.integers(0, 100)),
)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(ops=st.lists(operation, min_size=1, max_size=40), shards=st.integers(1, 4))
def test_sharded_ceilings_keep_every_invariant(aws, ops, shards):
    ceilings = ledger.Ceilings(day=3000, month=10**6, visitor=10**6, shards=shards)
    table = f"shards-{uuid.uuid4().hex}"
    create_ledger_table(aws.dynamodb, table)
    open_, owed = [], 0  # the open reservations; what settled reservations really cost
    try:
        for n, op in enumerate(ops):
            if op[0] == "reserve":
                out = _reserve(aws, f"r{n}", op[1], ceilings, table=table, visitor=f"v{n % 3}")
                if isinstance(out, ledger.Reservation):
                    open_.append(out)
                else:
                    assert out == ledger.Refusal("ceiling")
                    # Refused only when every shard lacked room: the unused budget is
                    # at most N x (reserve - 1), plus what ceiling // N rounded off.
                    unused = ceilings.day - sum(_day_totals(aws, shards, table))
                    assert unused <= shards * (op[1] - 1) + ceilings.day % shards
            elif open_:
                r = open_.pop(op[1] % len(open_))
                actual = r.reserved_micros * op[2] // 100
                ledger.reconcile(aws.dynamodb, table, r, actual_micros=actual, now=NOW)
                owed += actual
            totals = _day_totals(aws, shards, table)
            assert all(t <= ceilings.day_shard for t in totals)
            assert sum(totals) <= ceilings.day  # the hard cap, on the sum
            # Never under-counted: the ledger holds every open reserve and settled actual.
            assert sum(totals) == owed + sum(r.reserved_micros for r in open_)
    finally:
        aws.dynamodb.delete_table(TableName=table)


def test_naive_shards_that_never_try_another_strand_far_more(aws, monkeypatch):
    # The same harness with a request confined to its own shard: a refusal then leaves
    # whole shards unused, past the N x (reserve - 1) bound the real ledger keeps.
    real = ledger.shard_order
    monkeypatch.setattr(ledger, "shard_order", lambda rid, n: real(rid, n)[:1])
    ceilings = ledger.Ceilings(3000, 10**6, 10**6, shards=3)
    own = real("x", 3)[0]
    same = [f"f{i}" for i in range(200) if real(f"f{i}", 3)[0] == own][:2]
    for request_id in same:
        _reserve(aws, request_id, 600, ceilings)
    assert _reserve(aws, "x", 600, ceilings) == ledger.Refusal("ceiling")
    unused = ceilings.day - sum(_day_totals(aws, 3))
    assert unused > 3 * (600 - 1)


# Red team 2 found that a change of N mid-period broke the cap: each shard's condition saw
# only its own item, so with day ceiling 1000, N = 1 spent 1000 on GLOBAL, and redeployed
# with N = 2, GLOBAL#1 (new, 500) admitted 500 more: 1500 on a 1000 day, the month alike.
# Now the month records the count its first reservation used, and every item checks it.
def _period_totals(aws, table, sk):
    """Every GLOBAL* item of one period, whatever shard count wrote it (one scan)."""
    items = aws.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sum(int(i.get("costMicros", {}).get("N", "0")) for i in items
               if i["pk"]["S"].startswith("GLOBAL") and i["sk"]["S"] == sk)  # fmt: skip


@pytest.mark.parametrize(("before_n", "after_n"), [(1, 2), (4, 2), (2, 1), (1, 4), (3, 5)])
def test_changing_the_shard_count_mid_period_keeps_the_hard_cap(aws, before_n, after_n):
    before = ledger.Ceilings(1000, 1000, 10**6, shards=before_n)
    for i in range(12):  # spend the day (and with it the month) at the old count
        _reserve(aws, f"before{i}", 100, before, visitor=f"b{i}")
    spent = _period_totals(aws, aws.table, DAY)
    after = ledger.Ceilings(1000, 1000, 10**6, shards=after_n)
    late = [_reserve(aws, f"after{i}", 100, after, visitor=f"v{i}") for i in range(12)]
    assert all(out == ledger.Refusal("ceiling") for out in late)
    assert _period_totals(aws, aws.table, DAY) == spent <= 1000
    assert _period_totals(aws, aws.table, f"MONTH#{MONTH}") == spent <= 1000
    # Every reservation of the month used the count it recorded: the old one.
    recorded = aws.item("GLOBAL", f"SHARDS#{MONTH}")
    assert recorded["shards"]["N"] == str(before_n)


def test_a_new_count_applies_from_the_next_month(aws):
    one = ledger.Ceilings(1000, 10**6, 10**6, shards=1)
    assert _reserve(aws, "nov", 100, one).shard == 0
    two = ledger.Ceilings(1000, 10**6, 10**6, shards=2)
    december = [
        ledger.reserve(aws.dynamodb, aws.table, request_id=f"dec{i}", visitor="v",
                       day="2026-12-01", micros=10, ceilings=two, now=NOW + 3 * 86_400)
        for i in range(12)
    ]  # fmt: skip
    assert {r.shard for r in december} == {0, 1}
    assert aws.item("GLOBAL", "SHARDS#2026-12")["shards"]["N"] == "2"
    # Still November: the recorded single shard, whatever the new setting says.
    assert {_reserve(aws, f"nov{i}", 10, two).shard for i in range(12)} == {0}


change = st.one_of(
    st.tuples(st.just("reserve"), st.integers(1, 600), st.integers(1, 4), st.integers(0, 1)),
    st.tuples(st.just("settle"), st.integers(0, 40), st.integers(0, 100)),
)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(ops=st.lists(change, min_size=1, max_size=30))
def test_any_shard_changes_mid_period_keep_every_ceiling(aws, ops):
    # Each reservation is made with any count 1..4 on either of two days of one month; the
    # first count the month met is the one every reservation lands under.
    days = ["2026-11-29", "2026-11-30"]
    table = f"change-{uuid.uuid4().hex}"
    create_ledger_table(aws.dynamodb, table)
    open_, owed, first = [], 0, None
    try:
        for n, op in enumerate(ops):
            if op[0] == "reserve":
                ceilings = ledger.Ceilings(2000, 3000, 10**6, shards=op[2])
                first = first or op[2]
                out = ledger.reserve(
                    aws.dynamodb, table, request_id=f"r{n}", visitor=f"v{n % 3}",
                    day=days[op[3]], micros=op[1], ceilings=ceilings, now=NOW,
                )  # fmt: skip
                if isinstance(out, ledger.Reservation):
                    assert out.shard < first  # a shard of the recorded count
                    open_.append(out)
                else:
                    assert out == ledger.Refusal("ceiling")
            elif open_:
                r = open_.pop(op[1] % len(open_))
                actual = r.reserved_micros * op[2] // 100
                ledger.reconcile(aws.dynamodb, table, r, actual_micros=actual, now=NOW)
                owed += actual
            for day in days:
                assert _period_totals(aws, table, day) <= 2000
            month = _period_totals(aws, table, f"MONTH#{MONTH}")
            assert month <= 3000
            assert month == owed + sum(r.reserved_micros for r in open_)
    finally:
        aws.dynamodb.delete_table(TableName=table)
