"""The ledger's items: keys, expiry, and the transaction items it writes (no I/O here).

Keys: docs/internals.md. Money is integer micro-USD. Expiry is counted from the
period an item belongs to, so a total never expires while its day or month can still be
charged or settled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DAY_SECONDS = 86_400
Key = dict[str, dict[str, str]]

# Items of the reservation transaction, in order: CancellationReasons are reported per item.
ITEM_DAY, ITEM_MONTH, ITEM_VISITOR, ITEM_RESERVATION, ITEM_MODE = range(5)
_ADD_COST = "ADD costMicros :r SET expiresAt = if_not_exists(expiresAt, :exp)"
_SETTLE = "SET #status = :settled, actualMicros = :actual, settledAt = :now"


def _key(pk: str, sk: str) -> Key:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def day_key(day: str) -> Key:
    return _key("GLOBAL", day)


def month_key(month: str) -> Key:
    return _key("GLOBAL", f"MONTH#{month}")


def visitor_key(visitor: str, day: str) -> Key:
    return _key(f"VISITOR#{visitor}", day)


def reservation_key(request_id: str) -> Key:
    return _key(f"RES#{request_id}", "RES")


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


@dataclass(frozen=True, slots=True)
class Ceilings:
    day: int
    month: int
    visitor: int


def reservation_items(
    table: str, request_id: str, visitor: str, day: str, micros: int, ceilings: Ceilings, now: float
) -> list[dict[str, Any]]:
    month = month_of(day)
    totals = (
        (day_key(day), ceilings.day, day_expiry(day)),
        (month_key(month), ceilings.month, month_expiry(month)),
        (visitor_key(visitor, day), ceilings.visitor, day_expiry(day)),
    )
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": key,
                "UpdateExpression": _ADD_COST,
                "ConditionExpression": "attribute_not_exists(costMicros) OR costMicros <= :max",
                "ExpressionAttributeValues": {
                    ":r": {"N": str(micros)},
                    ":max": {"N": str(ceiling - micros)},
                    ":exp": {"N": str(expiry)},
                },
            }
        }
        for key, ceiling, expiry in totals
    ]
    record = {
        "reservedMicros": {"N": str(micros)},
        "status": {"S": "open"},
        "expiresAt": {"N": str(int(now) + 2 * DAY_SECONDS)},
        "day": {"S": day},
        "month": {"S": month},
        "visitor": {"S": visitor},
    }
    items.append(
        {
            "Put": {
                "TableName": table,
                "Item": {**reservation_key(request_id), **record},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
    )
    items.append(
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": MODE_KEY,
                "ConditionExpression": "attribute_not_exists(#mode) OR #mode = :normal",
                "ExpressionAttributeNames": {"#mode": "mode"},
                "ExpressionAttributeValues": {":normal": {"S": "normal"}},
            }
        }
    )
    return items


def settlement_items(
    table: str, reservation: Reservation, actual_micros: int, now: float
) -> list[dict[str, Any]]:
    """Flip the reservation open -> settled and move the three totals by actual - reserved."""
    delta = actual_micros - reservation.reserved_micros
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": reservation_key(reservation.id),
                "UpdateExpression": _SETTLE,
                "ConditionExpression": "#status = :open AND reservedMicros = :reserved",
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
        day_key(reservation.day),
        month_key(reservation.month),
        visitor_key(reservation.visitor, reservation.day),
    )
    items += [
        {
            "Update": {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "ADD costMicros :delta",
                "ExpressionAttributeValues": {":delta": {"N": str(delta)}},
            }
        }
        for key in keys
    ]
    return items
