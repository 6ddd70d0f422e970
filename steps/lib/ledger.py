"""The spend ledger: one DynamoDB table, integer micro-USD, no scheduled job.

Keys (docs/internals.md): ``VISITOR#<hash>``/``<day>`` (msgCount, costMicros),
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
from typing import Any, Literal

from .errors import ChatguardError, DependencyUnavailable, ReconcileError
from .ledger_items import (
    ITEM_DAY,
    ITEM_MODE,
    ITEM_MONTH,
    ITEM_RESERVATION,
    ITEM_VISITOR,
    MODE_KEY,
    Ceilings,
    Key,
    Reservation,
    day_expiry,
    day_key,
    month_expiry,
    month_key,
    month_of,
    reservation_items,
    reservation_key,
    settlement_items,
    visitor_key,
)

# The key helpers and records are part of this module's API (the ops CLI reads spend
# through them); they live in ledger_items.py, which builds items and does no I/O.
__all__ = [
    "MODES", "MODE_KEY", "Ceilings", "Key", "Mode", "QuotaResult", "Refusal", "Reservation",
    "Settlement", "count_message", "day_expiry", "day_key", "get_item", "month_expiry",
    "month_key", "month_of", "read_cost", "read_mode", "reconcile", "reservation_key",
    "reserve", "visitor_key",
]  # fmt: skip

Mode = Literal["normal", "degraded", "off"]
MODES: tuple[Mode, ...] = ("normal", "degraded", "off")
# TransactionConflict means nothing was written: safe to try again.
_CONFLICT_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class QuotaResult:
    allowed: bool
    count: int | None


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: Literal["ceiling", "mode"]


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
    items = reservation_items(table, request_id, visitor, day, micros, ceilings, now)
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
    if ITEM_MODE in failed:
        return Refusal("mode")
    if failed & {ITEM_DAY, ITEM_MONTH, ITEM_VISITOR}:
        return Refusal("ceiling")
    if ITEM_RESERVATION in failed:
        raise ChatguardError("a reservation for this request id already exists")
    return None


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
    items = settlement_items(table, reservation, actual_micros, now)
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
