"""Pacing (issue 21): the day's ceiling released along a curve, inside the same conditional
reservation. The paced ledger admits only what the unpaced one would on the same state,
never more than allowance(t) by time t, and each reservation uses its own day's curve at
S3's clock (23:59:59 near the whole ceiling, 00:00:00 the next day's burst share)."""

from __future__ import annotations

import uuid
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from local.engine.tables import create_ledger_table
from steps.lib.money import ledger, pacing
from tests.clock import at

DAY, NEXT = "2026-12-31", "2027-01-01"  # the last day of a month and of a year
START = at("2026-12-31 00:00:00")
CEILING = 100_000
FLAT_HALF = pacing.Curve(Fraction(1, 2))

bursts = st.fractions(min_value=0, max_value=1, max_denominator=1000)
weights = st.lists(st.integers(0, 50), min_size=24, max_size=24).filter(lambda w: sum(w) > 0)
seconds = st.integers(-10_000, 2 * 86_400)


@given(burst=bursts, t=seconds, ceiling=st.integers(0, 10**9))
def test_the_flat_curve_is_the_formula_and_never_above_the_ceiling(burst, t, ceiling):
    curve = pacing.Curve(burst)
    clamped = min(max(t, 0), 86_400)
    share = min(Fraction(1), burst + (1 - burst) * Fraction(clamped, 86_400))
    assert curve.allowance(ceiling, t) == int(ceiling * share) <= ceiling


@given(burst=bursts, hours=weights, a=seconds, b=seconds, ceiling=st.integers(0, 10**9))
def test_any_curve_releases_more_over_time_from_the_burst_to_the_whole(burst, hours, a, b,
                                                                         ceiling):  # fmt: skip
    curve = pacing.Curve(burst, tuple(hours))
    early, late = sorted((a, b))
    assert curve.allowance(ceiling, early) <= curve.allowance(ceiling, late) <= ceiling
    assert curve.allowance(ceiling, 0) == int(ceiling * burst)
    assert curve.allowance(ceiling, 86_400) == ceiling


@given(burst=bursts, hours=weights, need=st.integers(0, CEILING))
def test_released_at_is_the_first_second_with_room(burst, hours, need):
    curve = pacing.Curve(burst, tuple(hours))
    moment = curve.released_at(CEILING, need)
    assert moment is not None and curve.allowance(CEILING, moment) >= need
    assert moment == 0 or curve.allowance(CEILING, moment - 1) < need
    assert curve.released_at(CEILING, CEILING + 1) is None


def test_a_bad_curve_is_refused_with_one_line():
    with pytest.raises(ValueError, match="24 comma-separated"):
        pacing.parse_curve("1,2,x")
    with pytest.raises(ValueError, match="24 hourly weights"):
        pacing.parse_curve(",".join(["0"] * 24))
    assert pacing.parse_curve("") == pacing.FLAT


def _reserve(aws, request_id, micros, *, now, day=DAY, curve=FLAT_HALF, table=None, shards=1,
             visitor="v"):  # fmt: skip
    ceilings = ledger.Ceilings(CEILING, 10**9, 10**9, shards=shards)
    return ledger.reserve(
        aws.dynamodb, table or aws.table, request_id=request_id, visitor=visitor, day=day,
        micros=micros, ceilings=ceilings, now=now, pacing=curve,
    )  # fmt: skip


def _day_total(aws, table, day=DAY):
    items = aws.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sum(int(i.get("costMicros", {}).get("N", "0")) for i in items
               if i["pk"]["S"].startswith("GLOBAL") and i["sk"]["S"] == day)  # fmt: skip


def test_23_59_59_and_00_00_00_each_use_their_own_days_curve(aws):
    # 23:59:59 of the 31st: 0.5 + 0.5 x 86,399/86,400 of 100,000 = 99,999 released.
    late = at("2026-12-31 23:59:59")
    assert isinstance(_reserve(aws, "late", 99_999, now=late), ledger.Reservation)
    # 00:00:00 of the 1st: a new day, its curve at its start: the burst share, 50,000.
    midnight = at("2027-01-01 00:00:00")
    paced = _reserve(aws, "new-big", 50_001, now=midnight, day=NEXT)
    assert paced == ledger.Refusal("paced", midnight + 2)  # 50,001 is released at 00:00:02
    assert isinstance(_reserve(aws, "new", 50_000, now=midnight, day=NEXT), ledger.Reservation)
    # A reservation of the 31st that S3 makes just after midnight: its own day, all released.
    assert isinstance(_reserve(aws, "straggler", 1, now=midnight, day=DAY), ledger.Reservation)


def test_a_refusal_by_pacing_alone_says_when_a_shard_has_room(aws):
    noon = START + 12 * 3600  # 75,000 released, 37,500 per shard of two
    for i in range(8):
        _reserve(aws, f"r{i}", 9_000, now=noon, shards=2, visitor=f"v{i}")
    out = _reserve(aws, "more", 9_000, now=noon, shards=2)
    assert out.reason == "paced" and out.released_at is not None
    assert noon < out.released_at < START + 86_400
    # Room appears there: the same request is admitted at that instant.
    assert isinstance(_reserve(aws, "more", 9_000, now=out.released_at, shards=2),
                      ledger.Reservation)  # fmt: skip


operation = st.one_of(
    st.tuples(st.just("reserve"), st.integers(1, 30_000), st.integers(0, 4 * 3600)),
    st.tuples(st.just("settle"), st.integers(0, 40), st.integers(0, 100)),
)


def _shard_totals(aws, table, shards, day=DAY):
    items = aws.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    cost = {i["pk"]["S"]: int(i.get("costMicros", {}).get("N", "0")) for i in items
            if i["pk"]["S"].startswith("GLOBAL") and i["sk"]["S"] == day}  # fmt: skip
    return [cost.get(ledger.shard_pk(k), 0) for k in range(shards)]


CURVES = [None, FLAT_HALF, pacing.Curve(Fraction(1, 10), (0,) * 6 + (5,) * 12 + (1,) * 6)]


@pytest.mark.parametrize("curve", CURVES, ids=["pacing off", "flat 0.5", "hourly 0.1"])
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(ops=st.lists(operation, min_size=1, max_size=30), shards=st.integers(1, 3))
def test_the_paced_ledger_admits_only_what_the_unpaced_would_and_never_past_the_allowance(
    aws, curve, ops, shards
):
    # Per decision, on the ledger's state as it is: an admission passes the unpaced
    # condition too (and the allowance); "paced" only where the unpaced one had room; a
    # "ceiling" refusal only where it had none. Over the sequence, every shard's day total
    # stays within what the curve released by then, and nothing is lost.
    table = f"paced-{uuid.uuid4().hex}"
    create_ledger_table(aws.dynamodb, table)
    shard = CEILING // shards
    now, open_, owed = START, [], 0
    try:
        for n, op in enumerate(ops):
            released = shard if curve is None else curve.allowance(
                shard, pacing.seconds_into(DAY, now))  # fmt: skip
            if op[0] == "reserve":
                now += op[2]  # time only moves on, past the day's end too
                released = shard if curve is None else curve.allowance(
                    shard, pacing.seconds_into(DAY, now))  # fmt: skip
                before, micros = _shard_totals(aws, table, shards), op[1]
                out = _reserve(aws, f"r{n}", micros, now=now, curve=curve, table=table,
                               shards=shards, visitor=f"v{n % 3}")  # fmt: skip
                unpaced_room = [t + micros <= shard for t in before]
                if isinstance(out, ledger.Reservation):
                    assert unpaced_room[out.shard]  # the unpaced ledger admits it too
                    assert before[out.shard] + micros <= released
                    open_.append(out)
                elif out.reason == "paced":
                    assert curve is not None and any(unpaced_room)
                    assert out.released_at is not None and out.released_at > now
                else:
                    assert out == ledger.Refusal("ceiling") and not any(unpaced_room)
            elif open_:
                r = open_.pop(op[1] % len(open_))
                actual = r.reserved_micros * op[2] // 100
                ledger.reconcile(aws.dynamodb, table, r, actual_micros=actual, now=now)
                owed += actual
            totals = _shard_totals(aws, table, shards)
            assert all(t <= released <= shard for t in totals)  # never past allowance(t)
            assert sum(totals) == owed + sum(r.reserved_micros for r in open_)  # none lost
    finally:
        aws.dynamodb.delete_table(TableName=table)


def _fill_three_shards(aws, table):
    create_ledger_table(aws.dynamodb, table)
    for i in range(40):  # every shard reaches 16,666: what the curve releases at 00:00
        _reserve(aws, f"fill{i}", 16_666, now=START, table=table, shards=3, visitor=f"v{i}")
    assert _shard_totals(aws, table, 3) == [16_666] * 3


def test_a_reserve_over_the_released_share_of_a_full_day_is_a_ceiling_not_a_promise(
    aws, monkeypatch
):
    """17,000 is more than pacing has released (16,666 a shard at 00:00), and no shard
    could ever take it today (16,666 + 17,000 > 33,333): the refusal is the ceiling's,
    with no release time. The naive rule (the pacing refusal priced as on an empty shard)
    promised a time at which the same request would still be refused."""
    _fill_three_shards(aws, "full")
    assert _reserve(aws, "big", 17_000, now=START, table="full", shards=3) == ledger.Refusal(
        "ceiling"
    )
    # A smaller request that one shard can take once released is paced, with its time.
    paced = _reserve(aws, "fits", 16_667, now=START, table="full", shards=3)
    assert paced.reason == "paced" and paced.released_at is not None
    assert isinstance(_reserve(aws, "fits", 16_667, now=paced.released_at, table="full",
                               shards=3), ledger.Reservation)  # fmt: skip

    monkeypatch.setattr(ledger, "_paced_only_costs", lambda a, ceilings: [0])  # naive rule
    naive = _reserve(aws, "big", 17_000, now=START, table="full", shards=3)
    assert naive.reason == "paced"  # a promise the day cannot keep
    assert _reserve(aws, "big", 17_000, now=naive.released_at, table="full",
                    shards=3) == ledger.Refusal("ceiling")  # fmt: skip


def test_a_failed_read_of_the_totals_refuses_without_a_promise(aws, monkeypatch):
    from botocore.exceptions import ClientError

    create_ledger_table(aws.dynamodb, "empty")
    real = aws.dynamodb.transact_write_items

    def throttled(**request):
        if all("ConditionCheck" in item for item in request["TransactItems"]):
            raise ClientError({"Error": {"Code": "ThrottlingException"}}, "TransactWriteItems")
        return real(**request)

    monkeypatch.setattr(aws.dynamodb, "transact_write_items", throttled)
    assert _reserve(aws, "big", 60_000, now=START, table="empty") == ledger.Refusal("ceiling")
    assert _shard_totals(aws, "empty", 1) == [0]  # nothing written
