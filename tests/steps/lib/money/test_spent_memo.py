"""The spent-day memo: a refused day stops costing DynamoDB writes, the memory goes stale
when it should, and it is money-safe: per decision it only turns admissions into refusals,
and with it on no total ever passes its ceiling (hypothesis, against the real conditional
write on moto)."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from local.engine.tables import create_ledger_table
from steps.lib.money import ledger
from steps.lib.money.spent_memo import SpentMemo

DAY = "2026-11-29"
NOW = 1_764_400_000.0
CEILINGS = ledger.Ceilings(day=1000, month=10**6, visitor=10**6)


class Counting:
    """A real (moto) client that counts TransactWriteItems calls."""

    def __init__(self, client: Any) -> None:
        self._client, self.writes = client, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def transact_write_items(self, **kwargs: Any) -> Any:
        self.writes += 1
        return self._client.transact_write_items(**kwargs)


def _reserve(client, table, request_id, micros, *, memo, now=NOW, ceilings=CEILINGS, day=DAY):
    return ledger.reserve(
        client, table, request_id=request_id, visitor="v", day=day, micros=micros,
        ceilings=ceilings, now=now, memo=memo,
    )  # fmt: skip


def test_a_spent_day_stops_costing_writes_until_the_memory_expires(aws):
    client, memo = Counting(aws.dynamodb), SpentMemo(seconds=15)
    assert isinstance(_reserve(client, aws.table, "a", 600, memo=memo), ledger.Reservation)
    client.writes = 0  # from here (the day's first also recorded the shard count)
    assert _reserve(client, aws.table, "b", 600, memo=memo) == ledger.Refusal("ceiling")
    assert client.writes == 1
    for i in range(20):  # a flood on the spent day, within the memory's life
        out = _reserve(client, aws.table, f"f{i}", 600, memo=memo, now=NOW + i * 0.5)
        assert out == ledger.Refusal("ceiling")
    assert client.writes == 1  # not one more write
    _reserve(client, aws.table, "late", 600, memo=memo, now=NOW + 16)
    assert client.writes == 2  # expired: asked DynamoDB again (and remembered again)


def test_without_the_memo_every_request_on_a_spent_day_writes(aws):
    client = Counting(aws.dynamodb)
    _reserve(client, aws.table, "a", 600, memo=None)
    client.writes = 0  # from here (the day's first also recorded the shard count)
    for i in range(20):
        assert _reserve(client, aws.table, f"f{i}", 600, memo=None) == ledger.Refusal("ceiling")
    assert client.writes == 20


def test_a_stale_memory_expires_once_a_settlement_frees_room(aws):
    client, memo = Counting(aws.dynamodb), SpentMemo(seconds=15)
    first = _reserve(client, aws.table, "a", 600, memo=memo)
    assert _reserve(client, aws.table, "b", 600, memo=memo) == ledger.Refusal("ceiling")
    ledger.reconcile(aws.dynamodb, aws.table, first, actual_micros=100, now=NOW)
    # Within its life the memory still refuses (stale, and safe: a refusal spends nothing)...
    assert _reserve(client, aws.table, "c", 600, memo=memo, now=NOW + 5) == ledger.Refusal(
        "ceiling"
    )
    # ...and after it, the room the settlement freed is used again.
    assert isinstance(_reserve(client, aws.table, "d", 600, memo=memo, now=NOW + 16),
                      ledger.Reservation)  # fmt: skip


def test_a_day_whose_settled_total_alone_is_spent_is_refused_for_good(aws):
    client, memo = Counting(aws.dynamodb), SpentMemo(seconds=15)
    first = _reserve(client, aws.table, "a", 700, memo=memo)
    ledger.reconcile(aws.dynamodb, aws.table, first, actual_micros=700, now=NOW)
    assert _reserve(client, aws.table, "b", 600, memo=memo) == ledger.Refusal("ceiling")
    writes = client.writes
    # settled 700 > 1000 - 600: no settlement can ever make room for 600 today.
    later = _reserve(client, aws.table, "c", 600, memo=memo, now=NOW + 3600)
    assert later == ledger.Refusal("ceiling") and client.writes == writes
    # A reserve that could still fit (300 <= 1000 - 700) asks DynamoDB, and is admitted.
    small = _reserve(client, aws.table, "d", 300, memo=memo, now=NOW + 3600)
    assert isinstance(small, ledger.Reservation) and client.writes == writes + 1


def test_a_new_day_or_a_new_ceiling_starts_without_a_memory(aws):
    client, memo = Counting(aws.dynamodb), SpentMemo(seconds=15)
    _reserve(client, aws.table, "a", 600, memo=memo)
    _reserve(client, aws.table, "b", 600, memo=memo)
    raised = ledger.Ceilings(day=5000, month=10**6, visitor=10**6)
    assert isinstance(_reserve(client, aws.table, "c", 600, memo=memo, ceilings=raised),
                      ledger.Reservation)  # fmt: skip
    assert isinstance(_reserve(client, aws.table, "d", 600, memo=memo, day="2026-11-30"),
                      ledger.Reservation)  # fmt: skip


# Money-safety ------------------------------------------------------------------------------

reserve_op = st.tuples(st.just("reserve"), st.integers(1, 700), st.sampled_from(["v1", "v2"]))
operation = st.one_of(
    reserve_op,
    reserve_op,
    st.tuples(st.just("settle"), st.integers(0, 30), st.integers(0, 100)),
    st.tuples(st.just("wait"), st.sampled_from([1.0, 10.0, 16.0, 3600.0])),
)


def _mirror(client: Any, source: str, target: str) -> None:
    """Make ``target`` hold exactly the items of ``source``."""
    for item in client.scan(TableName=target, ConsistentRead=True)["Items"]:
        client.delete_item(TableName=target, Key={"pk": item["pk"], "sk": item["sk"]})
    for item in client.scan(TableName=source, ConsistentRead=True)["Items"]:
        client.put_item(TableName=target, Item=item)


def _totals(client: Any, table: str) -> dict[tuple[str, str], int]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return {(i["pk"]["S"], i["sk"]["S"]): int(i["costMicros"]["N"])
            for i in items if "costMicros" in i}  # fmt: skip


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=4, max_size=20), shards=st.sampled_from([1, 2]))
def test_the_memo_only_turns_admissions_into_refusals_and_never_overshoots(aws, ops, shards):
    ceilings = ledger.Ceilings(day=1000, month=1500, visitor=800, shards=shards)
    with_memo, without = f"memo-{uuid.uuid4().hex}", f"plain-{uuid.uuid4().hex}"
    for table in (with_memo, without):
        create_ledger_table(aws.dynamodb, table)
    memo, now, open_ = SpentMemo(seconds=15), NOW, []
    client = Counting(aws.dynamodb)
    try:
        for n, op in enumerate(ops):
            if op[0] == "wait":
                now += op[1]
            elif op[0] == "settle" and open_:
                r = open_.pop(op[1] % len(open_))
                actual = r.reserved_micros * op[2] // 100
                ledger.reconcile(aws.dynamodb, with_memo, r, actual_micros=actual, now=now)
            elif op[0] == "reserve":
                _, micros, visitor = op
                _mirror(aws.dynamodb, with_memo, without)  # the same ledger state
                kwargs = dict(request_id=f"r{n}", visitor=visitor, day=DAY, micros=micros,
                              ceilings=ceilings, now=now)  # fmt: skip
                plain = ledger.reserve(aws.dynamodb, without, **kwargs)
                before = client.writes
                out = ledger.reserve(client, with_memo, memo=memo, **kwargs)
                if isinstance(out, ledger.Reservation):
                    # Admitted with the memo => admitted without it (with shards perhaps on
                    # another shard: the memo may have skipped the first one).
                    assert isinstance(plain, ledger.Reservation)
                    assert (out.id, out.reserved_micros) == (plain.id, plain.reserved_micros)
                    open_.append(out)
                if client.writes == before:
                    event("refused by the memo, no write")
                    assert out == ledger.Refusal("ceiling")  # the memo only ever refuses
                elif shards == 1:
                    assert out == plain  # what reached DynamoDB decided as without the memo
            totals = _totals(aws.dynamodb, with_memo)
            for (pk, sk), cost in totals.items():
                if pk.startswith("GLOBAL"):
                    limit = ceilings.month_shard if sk.startswith("MONTH#") else ceilings.day_shard
                    assert cost <= limit
                else:
                    assert cost <= ceilings.visitor
            day = sum(c for (pk, sk), c in totals.items() if pk.startswith("GLOBAL") and sk == DAY)
            assert day <= ceilings.day  # the hard cap, on the sum of the shards
    finally:
        for table in (with_memo, without):
            aws.dynamodb.delete_table(TableName=table)
