"""The ledger's items: keys, expiry, and the transaction items it writes (no I/O here).

Keys: docs/internals.md. Money is integer micro-USD. Expiry is counted from the
period an item belongs to, so a total never expires while its day or month can still be
charged or settled.

Shards (``ceiling_shards`` = N, docs/scaling.md): the day and month totals are N item
pairs, shard ``k`` under partition key ``GLOBAL`` (k = 0) or ``GLOBAL#<k>``, each holding
``ceiling // N``; a different partition key puts each shard on its own partition. With
N = 1 the only shard is the unsharded ``GLOBAL`` pair.

The shard count in force is recorded with the month (``GLOBAL``/``SHARDS#<yyyy-mm>``) when
its first reservation opens it (month_opening.py, which also holds the rule for items
written before counts were recorded), and on every day/month shard item by the reservation
that first writes it; each reservation's condition requires its own N to be the recorded
one. The day's count is the month's: a changed ``ceiling_shards`` applies from the next
month, and a reservation made with another N is refused by the condition, not admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DAY_SECONDS = 86_400
Key = dict[str, dict[str, str]]

# The items of each transaction, by name, in the order they are written: DynamoDB reports
# CancellationReasons one per item in this order, and ledger.py reads them by these names.
RESERVATION_ITEMS = ("day", "month", "visitor", "reservation", "mode")
# The first reservation on a shard's item in the period also checks the month's record.
RECORDING_ITEMS = (*RESERVATION_ITEMS, "shards")
SETTLEMENT_ITEMS = ("reservation", "day", "month", "visitor")

# The reservation's condition, in parts. Each total (day, month, visitor) admits the reserve
# only while it leaves room for it after this reservation, ``:max = ceiling - reserve``
# (DynamoDB conditions cannot add): a total not written yet this period is zero.
TOTAL_NOT_STARTED = "attribute_not_exists(costMicros)"
TOTAL_LEAVES_ROOM = "costMicros <= :max"
TOTAL_ADMITS = f"{TOTAL_NOT_STARTED} OR {TOTAL_LEAVES_ROOM}"
# The recorded shard count. Once a day/month item carries it, a reservation only checks
# it there (SHARDS_AGREE), so the hot path touches no other item. The reservation that
# first writes an item (the first of its shard in the period) may record it there
# (SHARDS_RECORD_OR_AGREE) only in the same transaction as the month's record, which must
# already exist and agree (SHARDS_AGREE: month_opening.py writes it, never a reservation).
SHARDS_AGREE = "#shards = :n"
SHARDS_RECORD_OR_AGREE = "attribute_not_exists(#shards) OR #shards = :n"
# One reservation per request id: a replayed request cannot reserve twice.
RESERVATION_IS_NEW = "attribute_not_exists(pk)"
# The operator switch, checked in the same transaction (no mode cache to wait out).
MODE_IS_NORMAL = "attribute_not_exists(#mode) OR #mode = :normal"
# A reservation settles once, and only for the reserve it recorded.
SETTLES_ONCE = "#status = :open AND reservedMicros = :reserved"

_ADD_COST = "ADD costMicros :r SET expiresAt = if_not_exists(expiresAt, :exp)"
_ADD_SHARDED_COST = f"{_ADD_COST}, #shards = if_not_exists(#shards, :n)"
# Day and month totals also keep what settled (actuals only): it never decreases, and a
# total is never below it, so it proves a spent day stays spent (spent_memo.py).
_SETTLE_TOTAL = "ADD costMicros :delta, settledMicros :actual"
_SETTLE = "SET #status = :settled, actualMicros = :actual, settledAt = :now"


def _key(pk: str, sk: str) -> Key:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def shard_pk(shard: int) -> str:
    if shard < 0:
        raise ValueError(f"shard must be >= 0, not {shard}")
    return "GLOBAL" if shard == 0 else f"GLOBAL#{shard}"


def shard_pks(shards: int) -> list[str]:
    """Every day/month partition key of ``shards`` shards (IAM scopes the steps to these)."""
    return [shard_pk(k) for k in range(shards)]


def day_key(day: str, shard: int = 0) -> Key:
    return _key(shard_pk(shard), day)


def month_key(month: str, shard: int = 0) -> Key:
    return _key(shard_pk(shard), f"MONTH#{month}")


def visitor_key(visitor: str, day: str) -> Key:
    return _key(f"VISITOR#{visitor}", day)


def reservation_key(request_id: str) -> Key:
    return _key(f"RES#{request_id}", "RES")


def shards_key(month: str) -> Key:
    """The month's record of its shard count (on ``GLOBAL``: written once per month)."""
    return _key("GLOBAL", f"SHARDS#{month}")


MODE_KEY: Key = _key("CONFIG", "MODE")


def month_of(day: str) -> str:
    return day[:7]


def day_expiry(day: str) -> int:
    """End of the day plus two days: long enough for any late reconcile, then TTL."""
    start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    return int(start.timestamp()) + 3 * DAY_SECONDS


def month_expiry(month: str) -> int:
    start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
    # 40 days from the month's first day: at least nine days past its end.
    return int(start.timestamp()) + 40 * DAY_SECONDS


@dataclass(frozen=True, slots=True)
class Reservation:
    id: str
    reserved_micros: int
    day: str
    month: str
    visitor: str
    shard: int = 0  # the day/month shard it reserved on: settled and released there


@dataclass(frozen=True, slots=True)
class Ceilings:
    """The configured ceilings; with ``shards`` > 1 each day/month shard holds 1/N of them."""

    day: int
    month: int
    visitor: int
    shards: int = 1

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError(f"shards must be >= 1, not {self.shards}")

    @property
    def day_shard(self) -> int:
        # Rounded down: the shards together never hold more than the ceiling.
        return self.day // self.shards

    @property
    def month_shard(self) -> int:
        return self.month // self.shards


def reservation_items(
    table: str,
    request_id: str,
    visitor: str,
    day: str,
    reserve: int,
    ceilings: Ceilings,
    now: float,
    shard: int = 0,
    *,
    day_allowance: int | None = None,
    record: bool = False,
) -> list[dict[str, Any]]:
    """The reservation on one day/month shard (link 2 of pricing.py's proof), its items in
    the order of RESERVATION_ITEMS (RECORDING_ITEMS with ``record``).

    Each of the three totals is an Update under TOTAL_ADMITS with ``:max = ceiling -
    reserve`` (the shard's ceiling for day and month): ``total <= ceiling - reserve``. The
    day's ceiling is ``day_allowance`` when given: what pacing has released of the shard's
    ceiling by ``now`` (pacing.py), never more than it. The day and month items also require
    ``ceilings.shards`` to be the count recorded on them (SHARDS_AGREE); with ``record``
    (their first write this period) an item without a record takes this one, and the
    month's record (``shards_key``) is checked to agree in the same transaction. The
    reservation item is a Put under RESERVATION_IS_NEW, and the mode a ConditionCheck under
    MODE_IS_NORMAL. A refused day or month item returns its old attributes
    (``ReturnValuesOnConditionCheckFailure``), which the spent-day memo and the recorded
    count are read from; the condition itself is unchanged by it.
    """
    month = month_of(day)
    day_ceiling = ceilings.day_shard
    if day_allowance is not None:
        day_ceiling = min(day_allowance, day_ceiling)
    shards_condition = SHARDS_RECORD_OR_AGREE if record else SHARDS_AGREE
    totals = (
        (day_key(day, shard), day_ceiling, day_expiry(day), True),
        (month_key(month, shard), ceilings.month_shard, month_expiry(month), True),
        (visitor_key(visitor, day), ceilings.visitor, day_expiry(day), False),
    )
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": key,
                "UpdateExpression": _ADD_SHARDED_COST if shared else _ADD_COST,
                "ConditionExpression": (
                    f"({TOTAL_ADMITS}) AND ({shards_condition})" if shared else TOTAL_ADMITS
                ),
                "ExpressionAttributeValues": {
                    ":r": {"N": str(reserve)},
                    ":max": {"N": str(ceiling - reserve)},
                    ":exp": {"N": str(expiry)},
                    **({":n": {"N": str(ceilings.shards)}} if shared else {}),
                },
                **(
                    {
                        "ExpressionAttributeNames": {"#shards": "shards"},
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                    if shared
                    else {}
                ),
            }
        }
        for key, ceiling, expiry, shared in totals
    ]
    record_item = {
        "reservedMicros": {"N": str(reserve)},
        "status": {"S": "open"},
        "expiresAt": {"N": str(int(now) + 2 * DAY_SECONDS)},
        "day": {"S": day},
        "month": {"S": month},
        "visitor": {"S": visitor},
        "shard": {"N": str(shard)},
    }
    items.append(
        {
            "Put": {
                "TableName": table,
                "Item": {**reservation_key(request_id), **record_item},
                "ConditionExpression": RESERVATION_IS_NEW,
            }
        }
    )
    items.append(
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": MODE_KEY,
                "ConditionExpression": MODE_IS_NORMAL,
                "ExpressionAttributeNames": {"#mode": "mode"},
                "ExpressionAttributeValues": {":normal": {"S": "normal"}},
            }
        }
    )
    if record:
        items.append(
            {
                "ConditionCheck": {
                    "TableName": table,
                    "Key": shards_key(month),
                    "ConditionExpression": SHARDS_AGREE,
                    "ExpressionAttributeNames": {"#shards": "shards"},
                    "ExpressionAttributeValues": {":n": {"N": str(ceilings.shards)}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        )
    return items


def settlement_items(
    table: str, reservation: Reservation, actual_micros: int, now: float
) -> list[dict[str, Any]]:
    """Flip the reservation open -> settled (SETTLES_ONCE) and move the three totals by
    actual - reserve, its items in the order of SETTLEMENT_ITEMS.

    The totals are the day/month shard the reservation was made on (``reservation.shard``)
    and the visitor's; the day and month also add ``actual`` to ``settledMicros``.
    """
    delta = actual_micros - reservation.reserved_micros
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": reservation_key(reservation.id),
                "UpdateExpression": _SETTLE,
                "ConditionExpression": SETTLES_ONCE,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":settled": {"S": "settled"},
                    ":open": {"S": "open"},
                    ":actual": {"N": str(actual_micros)},
                    ":reserved": {"N": str(reservation.reserved_micros)},
                    ":now": {"N": str(int(now))},
                },
            }
        }
    ]
    keys = (
        (day_key(reservation.day, reservation.shard), True),
        (month_key(reservation.month, reservation.shard), True),
        (visitor_key(reservation.visitor, reservation.day), False),
    )
    items += [
        {
            "Update": {
                "TableName": table,
                "Key": key,
                "UpdateExpression": _SETTLE_TOTAL if shared else "ADD costMicros :delta",
                "ExpressionAttributeValues": {
                    ":delta": {"N": str(delta)},
                    **({":actual": {"N": str(actual_micros)}} if shared else {}),
                },
            }
        }
        for key, shared in keys
    ]
    return items
