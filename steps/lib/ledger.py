"""The spend ledger: one DynamoDB table, integer micro-USD, no scheduled job.

Keys (shared/DESIGN.md): ``VISITOR#<hash>``/``<day>`` (msgCount, costMicros),
``GLOBAL``/``<day>`` and ``GLOBAL``/``MONTH#<yyyy-mm>`` (costMicros), ``RES#<request id>``/
``RES`` (one reservation), ``CONFIG``/``MODE`` (the operator switch). A new day or month is
a new item starting at zero; ``expiresAt`` lets TTL sweep old items, and reads ignore items
past it because TTL deletes lazily. Every AWS failure becomes DependencyUnavailable
(``from exc``), so the step fails closed.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from .errors import ChatguardError, DependencyUnavailable, ReconcileError

DAY_SECONDS = 86_400
Mode = Literal["normal", "degraded", "off"]
MODES: tuple[Mode, ...] = ("normal", "degraded", "off")
Key = dict[str, dict[str, str]]

# Items of the reservation transaction, in order: CancellationReasons are reported per item.
_DAY, _MONTH, _VISITOR, _RESERVATION, _MODE = range(5)
# TransactionConflict means nothing was written: safe to try again.
_CONFLICT_ATTEMPTS = 4
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
class QuotaResult:
    allowed: bool
    count: int | None


@dataclass(frozen=True, slots=True)
class Reservation:
    id: str
    reserved_micros: int
    day: str
    month: str
    visitor: str


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: Literal["ceiling", "mode"]


@dataclass(frozen=True, slots=True)
class Ceilings:
    day: int
    month: int
    visitor: int


@dataclass(frozen=True, slots=True)
class Settlement:
    status: Literal["settled", "already_settled"]
    actual_micros: int
    released_micros: int


def _call(action: str, method: Any, **request: Any) -> tuple[dict[str, Any] | None, Any]:
    """Call DynamoDB; (response, None) or (None, cancellation) for a refused condition.

    A failed condition is an expected outcome here (over quota, over a ceiling); every other
    AWS failure becomes DependencyUnavailable with the cause kept.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return method(**request), None
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        if code == "ConditionalCheckFailedException":
            return None, []
        if code == "TransactionCanceledException":
            return None, [
                r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])
            ]
        raise DependencyUnavailable(f"DynamoDB {action} failed: {code}") from exc
    except BotoCoreError as exc:
        raise DependencyUnavailable(f"DynamoDB {action} failed: {type(exc).__name__}") from exc


def count_message(client: Any, table: str, *, visitor: str, day: str, limit: int) -> QuotaResult:
    """One conditional atomic ADD: the message counts only while the visitor is under limit."""
    response, _ = _call(
        "UpdateItem (quota)",
        client.update_item,
        TableName=table,
        Key=visitor_key(visitor, day),
        UpdateExpression="ADD msgCount :one SET expiresAt = if_not_exists(expiresAt, :exp)",
        ConditionExpression="attribute_not_exists(msgCount) OR msgCount < :limit",
        ExpressionAttributeValues={
            ":one": {"N": "1"},
            ":limit": {"N": str(limit)},
            ":exp": {"N": str(day_expiry(day))},
        },
        ReturnValues="UPDATED_NEW",
    )
    if response is None:
        return QuotaResult(allowed=False, count=None)
    return QuotaResult(allowed=True, count=int(response["Attributes"]["msgCount"]["N"]))


def reserve(
    client: Any,
    table: str,
    *,
    request_id: str,
    visitor: str,
    day: str,
    micros: int,
    ceilings: Ceilings,
    now: float,
) -> Reservation | Refusal:
    """Reserve ``micros`` on day, month and visitor at once, or on none of them.

    Each total must satisfy ``total <= ceiling - micros`` (DynamoDB conditions cannot add),
    so the ceiling still holds after this reservation however many run concurrently. The
    operator switch is a ConditionCheck in the same transaction: the normal path costs one
    DynamoDB call, and a switch applies from the very next message (no mode cache to wait
    out). Only when that check fails do we read the item to tell degraded from off.
    """
    month = month_of(day)
    if micros > min(ceilings.day, ceilings.month, ceilings.visitor):
        return Refusal("ceiling")  # a new item would pass attribute_not_exists: refuse here
    items = _reservation_items(table, request_id, visitor, day, micros, ceilings, now)
    for attempt in range(_CONFLICT_ATTEMPTS):
        response, reasons = _call(
            "TransactWriteItems (reserve)",
            client.transact_write_items,
            TransactItems=items,
            ClientRequestToken=_token(request_id),
        )
        if response is not None:
            return Reservation(request_id, micros, day, month, visitor)
        outcome = _refusal(reasons)
        if outcome is not None:
            return outcome
        if "TransactionConflict" not in reasons or attempt == _CONFLICT_ATTEMPTS - 1:
            break
        time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    raise DependencyUnavailable(f"DynamoDB TransactWriteItems (reserve) cancelled: {reasons}")


def _refusal(reasons: list[str]) -> Refusal | None:
    failed = {i for i, code in enumerate(reasons) if code == "ConditionalCheckFailed"}
    if _MODE in failed:
        return Refusal("mode")
    if failed & {_DAY, _MONTH, _VISITOR}:
        return Refusal("ceiling")
    if _RESERVATION in failed:
        raise ChatguardError("a reservation for this request id already exists")
    return None


def _reservation_items(
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


def _token(request_id: str) -> str:
    # ClientRequestToken makes a resent transaction idempotent; it allows at most 36 chars.
    return hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:36]


def reconcile(
    client: Any, table: str, reservation: Reservation, *, actual_micros: int, now: float
) -> Settlement:
    """Settle a reservation to the actual cost, in one transaction, at most once.

    The reservation flips open -> settled under a condition, and the three totals move by
    ``actual - reserved`` (normally <= 0) in the same transaction, so a repeat (a retried
    Lambda, a replayed event) is a no-op reported as ``already_settled``. If the model
    somehow cost more than reserved, the totals go up: never under-count real spend.
    """
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
    response, reasons = _call(
        "TransactWriteItems (reconcile)", client.transact_write_items, TransactItems=items
    )
    if response is not None:
        return Settlement("settled", actual_micros, max(0, -delta))
    if (
        reasons
        and reasons[0] == "ConditionalCheckFailed"
        and _status(client, table, reservation.id) == "settled"
    ):
        return Settlement("already_settled", actual_micros, 0)
    raise ReconcileError(f"reservation {reservation.id} could not be settled: {reasons}")


def _status(client: Any, table: str, request_id: str) -> str | None:
    item = get_item(client, table, reservation_key(request_id), now=None)
    return item.get("status", {}).get("S") if item else None


def get_item(client: Any, table: str, key: Key, *, now: float | None) -> dict[str, Any] | None:
    """A strongly consistent read that treats an item past its ``expiresAt`` as absent."""
    response, _ = _call("GetItem", client.get_item, TableName=table, Key=key, ConsistentRead=True)
    item: dict[str, Any] | None = (response or {}).get("Item")
    if item and now is not None and "expiresAt" in item and int(item["expiresAt"]["N"]) <= now:
        return None
    return item


def read_mode(client: Any, table: str, *, now: float) -> Mode:
    """The operator switch; an absent item is ``normal``, an unknown value ``degraded``.

    An unknown value is a typo by the operator: the safe reading spends nothing, and
    degraded still answers visitors from the site's own text.
    """
    item = get_item(client, table, MODE_KEY, now=now)
    value = (item or {}).get("mode", {}).get("S", "normal")
    return value if value in MODES else "degraded"


def read_cost(client: Any, table: str, key: Key, *, now: float) -> int:
    """One total in micro-USD (0 for a missing or expired item): for the ops CLI and tests."""
    item = get_item(client, table, key, now=now)
    return int(item["costMicros"]["N"]) if item and "costMicros" in item else 0
