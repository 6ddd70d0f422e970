"""The spend ledger: one DynamoDB table, integer micro-USD, no scheduled job.

Keys (docs/internals.md): ``VISITOR#<hash>``/``<day>`` (msgCount, costMicros),
``GLOBAL``/``<day>`` and ``GLOBAL``/``MONTH#<yyyy-mm>`` (costMicros), ``RES#<request id>``/
``RES`` (one reservation), ``CONFIG``/``MODE`` (the operator switch). A new day or month is
a new item starting at zero; ``expiresAt`` lets TTL sweep old items, and reads ignore items
past it because TTL deletes lazily. Every AWS failure becomes DependencyUnavailable
(``from exc``), so the step fails closed.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ..runtime.errors import ChatguardError, DependencyUnavailable, ReconcileError
from . import month_opening
from . import pacing as pacing_curve
from .ledger_items import (
    DAY_SECONDS,
    MODE_KEY,
    RECORDING_ITEMS,
    RESERVATION_IS_NEW,
    RESERVATION_ITEMS,
    SETTLEMENT_ITEMS,
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
    shard_pk,
    shards_key,
    visitor_key,
)
from .spent_memo import SpentMemo

# The key helpers and records are part of this module's API (the ops CLI reads spend
# through them); they live in ledger_items.py, which builds items and does no I/O.
__all__ = [
    "MODES", "MODE_KEY", "QUOTA_BACKOFF", "RESERVATION_BACKOFF", "SETTLE_BACKOFF", "Backoff",
    "Ceilings", "Key",
    "Mode", "Pace", "QuotaResult", "Refusal", "Reservation", "Settlement", "count_message",
    "day_expiry", "day_key", "get_item", "month_expiry", "month_key", "month_of",
    "read_cost", "read_mode", "reconcile", "release_by_request", "reservation_key", "reserve",
    "shard_order", "shard_pk", "shards_key", "visitor_key",
]  # fmt: skip

Mode = Literal["normal", "degraded", "off"]
MODES: tuple[Mode, ...] = ("normal", "degraded", "off")

# Contention: the call wrote nothing and may simply be tried again. Throttling as an error
# of the whole call, and the cancellation reasons of a transaction that met a concurrent
# one (TransactionConflict) or a throttled item; "None" marks the items that were fine.
THROTTLE_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
CONTENTION_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded",
     "RequestLimitExceeded"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Backoff:
    """Full-jitter exponential backoff, bounded in time: before retry ``n`` (1, 2, ...) wait
    ``uniform(0, min(cap, base x 2**n))``, and give up rather than start a wait that would
    end past ``budget_seconds`` from the first attempt."""

    budget_seconds: float
    base_seconds: float = 0.01
    cap_seconds: float = 0.2
    max_attempts: int = 32  # a guard for a clock that does not move; the budget binds first

    def wait(self, retry: int, draw: float) -> float:
        return float(draw * min(self.cap_seconds, self.base_seconds * 2**retry))


# Within the Lambda timeouts of S3 (2 s) and S6 (5 s) (runtime/stages.py; a test keeps each at
# most half its step's timeout). The budget bounds the waits, not the attempts: one started
# just before it ends still runs its client's worst (one attempt, 0.75 s: runtime/clients.py),
# so S3 ends within 1.75 s (tests/infra/test_client_retry_waits.py). S3 gives up sooner:
# its visitor waits, and a degraded answer is a fine outcome. S6 tries longer: a lost
# settlement leaves the whole reserve on the day.
RESERVATION_BACKOFF = Backoff(budget_seconds=1.0)
SETTLE_BACKOFF = Backoff(budget_seconds=2.5)
# The quota ADD: a throttled ADD wrote nothing, so it is tried again, briefly: S2 also reads
# the salt from SSM when cold, and both must end inside its 2 s (tests/infra/test_client_
# retry_waits.py adds them up). Out of budget, the visitor's message fails closed (503).
QUOTA_BACKOFF = Backoff(budget_seconds=0.25)


@dataclass(frozen=True, slots=True)
class Pace:
    """The clock, the sleep and the jitter source of the retries (tests inject all three).

    ``draw`` None: a fresh ``random.SystemRandom`` at call time (the OS's entropy), never a
    generator seeded at import: with SnapStart every container restored from one snapshot
    would share its state and retry in lockstep.
    """

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    draw: Callable[[], float] | None = None


@dataclass(frozen=True, slots=True)
class QuotaResult:
    allowed: bool
    count: int | None


@dataclass(frozen=True, slots=True)
class Refusal:
    # contention: the reservation met conflicts or throttling until its retry budget ran out;
    # paced: the day had room under its ceiling, not yet under what pacing has released
    reason: Literal["ceiling", "mode", "contention", "paced"]
    released_at: float | None = None  # paced: when enough is released (epoch seconds)


@dataclass(frozen=True, slots=True)
class Settlement:
    # void: no reservation existed for the request id, and none can land now
    status: Literal["settled", "already_settled", "void"]
    actual_micros: int
    released_micros: int


class _Contention(Exception):
    """Internal: this attempt met contention and wrote nothing."""


@dataclass(frozen=True, slots=True)
class _Cancelled:
    reasons: list[str]  # one code per item of the transaction, in order ("None": it was fine)
    items: list[dict[str, Any] | None]  # the old item of a refused condition, if returned

    def refused(self, names: tuple[str, ...]) -> set[str]:
        """The items, by name (``names`` in transaction order), whose condition failed."""
        return {
            name
            for name, code in zip(names, self.reasons, strict=False)
            if code == "ConditionalCheckFailed"
        }

    def old_item(self, names: tuple[str, ...], name: str) -> dict[str, Any] | None:
        index = names.index(name)
        return self.items[index] if index < len(self.items) else None


def _call(
    action: str, method: Any, *, contention: bool = False, **request: Any
) -> tuple[dict[str, Any] | None, _Cancelled | None]:
    """Call DynamoDB; (response, None) or (None, cancellation) for a refused condition.

    A failed condition is an expected outcome here (over quota, over a ceiling). With
    ``contention`` True, throttling and a transaction cancelled only by conflicts or
    throttles raise _Contention for the caller's retry loop; every other AWS failure (and,
    without it, contention too) becomes DependencyUnavailable with the cause kept.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return method(**request), None
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        if code == "ConditionalCheckFailedException":
            return None, _Cancelled([], [])
        if code == "TransactionCanceledException":
            raw = exc.response.get("CancellationReasons", [])
            cancelled = _Cancelled(
                [r.get("Code", "None") for r in raw], [r.get("Item") for r in raw]
            )
            failed = set(cancelled.reasons) - {"None"}
            if contention and failed and failed <= CONTENTION_REASONS:
                raise _Contention(f"{action}: {cancelled.reasons}") from exc
            return None, cancelled
        if contention and code in THROTTLE_CODES:
            raise _Contention(f"{action}: {code}") from exc
        raise DependencyUnavailable(f"DynamoDB {action} failed: {code}") from exc
    except BotoCoreError as exc:
        raise DependencyUnavailable(f"DynamoDB {action} failed: {type(exc).__name__}") from exc


T = TypeVar("T")


def _retrying(attempt: Callable[[], T], backoff: Backoff, pace: Pace) -> T:
    """Run ``attempt`` until it does not meet contention; _Contention once out of time."""
    draw = pace.draw or random.SystemRandom().random
    started, retry = pace.clock(), 0
    while True:
        try:
            return attempt()
        except _Contention:
            retry += 1
            wait = backoff.wait(retry, draw())
            elapsed = pace.clock() - started
            if retry >= backoff.max_attempts or elapsed + wait > backoff.budget_seconds:
                raise
            pace.sleep(wait)


def count_message(
    client: Any, table: str, *, visitor: str, day: str, limit: int, pace: Pace = Pace()
) -> QuotaResult:
    """One conditional atomic ADD: the message counts only while the visitor is under limit.
    A throttled ADD (it wrote nothing) is tried again within QUOTA_BACKOFF; after that,
    DependencyUnavailable (fail closed)."""
    try:
        response, _ = _retrying(
            functools.partial(_quota_add, client, table, visitor, day, limit), QUOTA_BACKOFF, pace
        )
    except _Contention as exc:  # still throttled when the budget ran out: fail closed
        raise DependencyUnavailable(f"DynamoDB {exc}") from exc.__cause__
    if response is None:
        return QuotaResult(allowed=False, count=None)
    return QuotaResult(allowed=True, count=int(response["Attributes"]["msgCount"]["N"]))


def _quota_add(
    client: Any, table: str, visitor: str, day: str, limit: int
) -> tuple[dict[str, Any] | None, _Cancelled | None]:
    return _call(
        "UpdateItem (quota)",
        client.update_item,
        contention=True,
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
    memo: SpentMemo | None = None,
    pace: Pace = Pace(),
    pacing: pacing_curve.Curve | None = None,
) -> Reservation | Refusal:
    """Make the reservation: hold the reserve ``micros`` on day, month and visitor at once,
    or on none of them.

    Each total must satisfy ``total <= ceiling - reserve`` (ledger_items.TOTAL_ADMITS),
    so the ceiling still holds after this reservation however many run concurrently. The
    operator switch is a ConditionCheck in the same transaction: the normal path costs one
    DynamoDB call, and a switch applies from the very next message (no mode cache to wait
    out). Only when that check fails do we read the item to tell degraded from off. With
    ``pacing``, the day's ceiling is what the curve has released at ``now`` (S3's clock)
    into the reservation's own day; a refusal it alone causes is ``Refusal("paced")``.

    With ``ceilings.shards`` = N > 1 the request reserves on one day/month shard (chosen
    from its id, so requests spread evenly) and, when that shard is spent, on the next,
    each under its own ``ceiling // N``; the visitor's total is not sharded. The count used
    is the one recorded for the month (ledger_items.py): a request made with another N
    meets it in the refused item and is made again with the recorded one. ``memo``
    (spent_memo.py) skips shards this container saw spent, without a write. Conflicts and
    throttling are retried with ``RESERVATION_BACKOFF``; when it runs out the answer is
    ``Refusal("contention")`` (degraded, no model call), not an error.
    """
    attempt = _Attempt(client, table, request_id, visitor, day, micros, now, pace.clock())
    # The recorded count, once met, is the period's: at most one switch, and one more when
    # this reservation is the one that opens the month (month_opening.py).
    for _ in range(3):
        outcome = _reserve_on_shards(attempt, ceilings, memo, pace, pacing)
        if not isinstance(outcome, _Recorded):
            return outcome
        ceilings = dataclasses.replace(ceilings, shards=outcome.shards)
    raise DependencyUnavailable("the recorded ceiling_shards changed twice in one reservation")


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What stays the same over every transaction one reservation tries."""

    client: Any
    table: str
    request_id: str
    visitor: str
    day: str
    micros: int
    now: float
    started: float


@dataclass(frozen=True, slots=True)
class _Recorded:
    """Internal: the period's recorded shard count differs from the one tried."""

    shards: int


def _reserve_on_shards(
    a: _Attempt,
    ceilings: Ceilings,
    memo: SpentMemo | None,
    pace: Pace,
    curve: pacing_curve.Curve | None,
) -> Reservation | Refusal | _Recorded:
    month = month_of(a.day)
    seconds = pacing_curve.seconds_into(a.day, a.now)
    allowance = ceilings.day_shard
    if curve is not None:  # what pacing has released of the shard's day by S3's clock
        allowance = curve.allowance(ceilings.day_shard, seconds)
    if a.micros > min(ceilings.day_shard, ceilings.month_shard, ceilings.visitor):
        return Refusal("ceiling")  # a new item would pass attribute_not_exists: refuse here
    if a.micros > allowance:  # the same, against what pacing has released so far
        # Paced only if some shard could take it once released, at its full ceilings; a
        # day whose every shard is too full for it is refused by its ceiling, with no
        # release time to promise.
        return _paced(curve, ceilings, a, _paced_only_costs(a, ceilings))
    paced_costs: list[int] = []  # the day total of each shard refused by pacing alone
    for shard in shard_order(a.request_id, ceilings.shards):
        key = (a.day, shard, ceilings.day_shard, ceilings.month_shard)
        if memo is not None and memo.refuses(key, a.micros, a.now):
            paced_costs += memo.paced_cost(key)
            continue
        try:
            cancelled, names = _try_shard(a, ceilings, shard, allowance, pace)
        except _Contention:
            return Refusal("contention")
        if cancelled is None:
            return Reservation(a.request_id, a.micros, a.day, month, a.visitor, shard)
        verdict = _verdict(cancelled, names, ceilings, a.micros)
        if isinstance(verdict, _Unopened):
            try:
                return _Recorded(_open_month(a, pace, ceilings.shards))
            except _Contention:
                return Refusal("contention")
        if not isinstance(verdict, _Spent):
            return verdict
        paced_costs += [] if verdict.paced_cost is None else [verdict.paced_cost]
        if memo is not None:
            room = _room_at_most(cancelled, names, ceilings)
            memo.remember(key, a.now, room, verdict.paced_cost)
        # this shard is spent: try the next one
    return _paced(curve, ceilings, a, paced_costs) if paced_costs else Refusal("ceiling")


@dataclass(frozen=True, slots=True)
class _Spent:
    """Internal: the shard's day or month had no room (``paced_cost``: pacing alone)."""

    paced_cost: int | None


@dataclass(frozen=True, slots=True)
class _Unopened:
    """Internal: the month has no record of its shard count yet (month_opening.py)."""


def _verdict(
    cancelled: _Cancelled, names: tuple[str, ...], ceilings: Ceilings, micros: int
) -> Refusal | _Recorded | _Spent | _Unopened:
    """What a cancelled reservation on one shard means, read by item name."""
    recorded = _recorded_shards(cancelled, names, ceilings.shards)
    if recorded is not None:
        return _Recorded(recorded)
    failed = cancelled.refused(names)
    if "mode" in failed:
        return Refusal("mode")
    if "shards" in failed:  # the month's record refused without a count of its own
        return _Unopened()
    if "visitor" in failed:
        return Refusal("ceiling")  # the visitor's own cap: no other shard helps
    if failed & {"day", "month"}:
        return _Spent(_paced_cost(cancelled, names, ceilings, micros))
    if "reservation" in failed:
        raise ChatguardError("a reservation for this request id already exists")
    raise DependencyUnavailable(f"DynamoDB TransactWriteItems (reservation) cancelled: "
                                f"{cancelled.reasons}")  # fmt: skip


def _try_shard(
    a: _Attempt, ceilings: Ceilings, shard: int, allowance: int, pace: Pace
) -> tuple[_Cancelled | None, tuple[str, ...]]:
    """The reservation on one shard: first as on a shard whose items carry the recorded
    count (the hot path: five items); when an item has no record yet (its first write this
    period), once more with the month's record in the same transaction. _Contention when
    the retry budget runs out."""
    cancelled: _Cancelled | None = None
    for record, names in ((False, RESERVATION_ITEMS), (True, RECORDING_ITEMS)):
        items = reservation_items(
            a.table, a.request_id, a.visitor, a.day, a.micros, ceilings, a.now, shard,
            day_allowance=allowance, record=record,
        )  # fmt: skip
        remaining = RESERVATION_BACKOFF.budget_seconds - (pace.clock() - a.started)
        token = _token(a.request_id, shard, record, ceilings.shards)
        cancelled = _retrying(
            functools.partial(_reservation_attempt, a.client, items, token),
            dataclasses.replace(RESERVATION_BACKOFF, budget_seconds=max(0.0, remaining)),
            pace,
        )
        if cancelled is None or not _unrecorded(cancelled, names):
            return cancelled, names
    return cancelled, RECORDING_ITEMS


def _open_month(a: _Attempt, pace: Pace, shards: int) -> int:
    """Open the reservation's month (month_opening.py) within what is left of its retry
    budget; the count every reservation of the month uses."""

    def transact(items: list[dict[str, Any]]) -> _Cancelled | None:
        remaining = RESERVATION_BACKOFF.budget_seconds - (pace.clock() - a.started)
        budget = dataclasses.replace(RESERVATION_BACKOFF, budget_seconds=max(0.0, remaining))
        return _retrying(functools.partial(_transact, a.client, items), budget, pace)

    return month_opening.open_month(transact, a.table, month_of(a.day), shards)


def _unrecorded(cancelled: _Cancelled, names: tuple[str, ...]) -> bool:
    """A refused day or month item that carries no shard count yet (absent, or written
    before counts were recorded): the reservation must record it with the month's."""
    return any(
        "shards" not in (cancelled.old_item(names, name) or {})
        for name in cancelled.refused(names) & {"day", "month"}
    )


def _recorded_shards(cancelled: _Cancelled, names: tuple[str, ...], shards: int) -> int | None:
    """The count recorded on a refused item, when it is not the one this attempt used."""
    for name in sorted(cancelled.refused(names) & {"day", "month", "shards"}):
        item = cancelled.old_item(names, name) or {}
        recorded = item.get("shards", {}).get("N")
        if recorded is not None and int(recorded) != shards:
            return int(recorded)
    return None


def _paced_cost(
    cancelled: _Cancelled, names: tuple[str, ...], ceilings: Ceilings, micros: int
) -> int | None:
    """The refused day total, when only pacing refused it: the month admitted, and the
    day had room for ``micros`` under its full ceiling."""
    if cancelled.refused(names) & {"day", "month"} != {"day"}:
        return None
    item = cancelled.old_item(names, "day") or {}
    cost = int(item.get("costMicros", {}).get("N", "0"))
    return cost if cost + micros <= ceilings.day_shard else None


def _paced_only_costs(a: _Attempt, ceilings: Ceilings) -> list[int]:
    """The day total of every shard whose day and month still have room for ``a.micros``
    under their full ceilings (an absent item counts 0), read without a write: one
    transaction of ConditionChecks that fail on every item that exists and return it (the
    role's ConditionCheckItem on the totals, month_opening.py). A failed read gives no
    shard: the refusal then names the ceiling and promises no release time."""
    shards = range(ceilings.shards)
    keys = [day_key(a.day, k) for k in shards] + [month_key(month_of(a.day), k) for k in shards]
    checks = [
        {
            "ConditionCheck": {
                "TableName": a.table,
                "Key": key,
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        for key in keys
    ]
    try:
        response, cancelled = _call(
            "TransactWriteItems (totals)", a.client.transact_write_items, TransactItems=checks
        )
    except DependencyUnavailable:
        return []
    items = [None] * len(keys) if cancelled is None else cancelled.items
    if response is None and (cancelled is None or len(items) != len(keys)):
        return []
    costs = [int((item or {}).get("costMicros", {}).get("N", "0")) for item in items]
    day, month = costs[: len(shards)], costs[len(shards) :]
    return [
        day[k]
        for k in shards
        if day[k] + a.micros <= ceilings.day_shard and month[k] + a.micros <= ceilings.month_shard
    ]


def _paced(
    curve: pacing_curve.Curve | None, ceilings: Ceilings, a: _Attempt, costs: list[int]
) -> Refusal:
    """Refused by pacing: when the curve releases room for this reserve on some shard."""
    if curve is None:
        return Refusal("ceiling")
    moments = [curve.released_at(ceilings.day_shard, cost + a.micros) for cost in costs]
    seconds = min((m for m in moments if m is not None), default=None)
    if seconds is None:
        return Refusal("ceiling")
    return Refusal("paced", pacing_curve.day_start(a.day) + seconds)


def _reservation_attempt(client: Any, items: list[dict[str, Any]], token: str) -> _Cancelled | None:
    return _transact(client, items, ClientRequestToken=token)


def _transact(client: Any, items: list[dict[str, Any]], **token: str) -> _Cancelled | None:
    response, cancelled = _call(
        "TransactWriteItems (reservation)",
        client.transact_write_items,
        contention=True,
        TransactItems=items,
        **token,
    )
    return None if response is not None else cancelled


def shard_order(request_id: str, shards: int) -> list[int]:
    """The shards a request tries, in order: its own (from a hash of its id), then the rest."""
    first = int(hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:8], 16) % shards
    return [(first + i) % shards for i in range(shards)]


def _room_at_most(cancelled: _Cancelled, names: tuple[str, ...], ceilings: Ceilings) -> int | None:
    """The most room the refused shard can have again this period, from ``settledMicros``
    of its refused day/month items (None when neither came back)."""
    rooms = []
    refused = cancelled.refused(names)
    for name, ceiling in (("day", ceilings.day_shard), ("month", ceilings.month_shard)):
        item = cancelled.old_item(names, name)
        if name in refused and item:
            rooms.append(ceiling - int(item.get("settledMicros", {}).get("N", "0")))
    return min(rooms) if rooms else None


def _token(request_id: str, shard: int = 0, record: bool = False, shards: int = 1) -> str:
    # ClientRequestToken makes a resent transaction idempotent; it allows at most 36 chars.
    # Each shard's transaction differs, so each gets its own token (a token reused with
    # other items is refused as IdempotentParameterMismatch), and so does the one that
    # records the shard count.
    name = request_id if shard == 0 else f"{request_id}#{shard}"
    name = f"{name}#record" if record else name
    name = name if shards == 1 else f"{name}/{shards}"
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:36]


def reconcile(
    client: Any,
    table: str,
    reservation: Reservation,
    *,
    actual_micros: int,
    now: float,
    pace: Pace = Pace(),
) -> Settlement:
    """Settle a reservation to the actual cost, in one transaction, at most once.

    The reservation flips open -> settled under a condition, and the three totals move by
    ``actual - reserved`` (normally <= 0) in the same transaction, so a repeat (a retried
    Lambda, a replayed event, a retry here whose first attempt did land) is a no-op
    reported as ``already_settled``. If the model somehow cost more than reserved, the
    totals go up: never under-count real spend. Conflicts and throttling are retried with
    ``SETTLE_BACKOFF``; past it, ReconcileError (the reservation stands: over-counts).
    """
    delta = actual_micros - reservation.reserved_micros
    items = settlement_items(table, reservation, actual_micros, now)

    def once() -> _Cancelled | None:
        response, cancelled = _call(
            "TransactWriteItems (reconcile)",
            client.transact_write_items,
            contention=True,
            TransactItems=items,
        )
        return None if response is not None else cancelled

    try:
        cancelled = _retrying(once, SETTLE_BACKOFF, pace)
    except _Contention as exc:
        raise ReconcileError(f"reservation {reservation.id} not settled: {exc}") from exc
    if cancelled is None:
        return Settlement("settled", actual_micros, max(0, -delta))
    if (
        "reservation" in cancelled.refused(SETTLEMENT_ITEMS)
        and _status(client, table, reservation.id) == "settled"
    ):
        return Settlement("already_settled", actual_micros, 0)
    raise ReconcileError(f"reservation {reservation.id} could not be settled: {cancelled.reasons}")


def release_by_request(
    client: Any,
    table: str,
    *,
    request_id: str,
    actual_micros: int,
    now: float,
    pace: Pace = Pace(),
) -> Settlement:
    """Release whatever reservation S3 made for `request_id` when S3 failed and its output
    never came back (its Lambda cut at the timeout after the transaction landed, say).

    The request id is claimed first: a Put of a void reservation item under the same
    condition S3's own Put carries (RESERVATION_IS_NEW). If it lands, S3 reserved nothing,
    and a transaction of S3's still in flight now fails that condition: nothing can land
    later. If it is refused, the reservation exists: it is read back (day, month, visitor,
    shard and reserve are on its item) and settled like any release, at most once
    (reconcile). A void item expires with the reservations' TTL. The id is API Gateway's
    own for the request (`$context.requestId`, infra/blocks/chat_api.py), so no other
    execution can hold the reservation released here.
    """
    void = {"status": {"S": "void"}, "expiresAt": {"N": str(int(now) + 2 * DAY_SECONDS)}}
    response, _ = _call(
        "PutItem (void reservation)",
        client.put_item,
        TableName=table,
        Item={**reservation_key(request_id), **void},
        ConditionExpression=RESERVATION_IS_NEW,
    )
    if response is not None:
        return Settlement("void", 0, 0)
    item = get_item(client, table, reservation_key(request_id), now=None)
    status = item.get("status", {}).get("S") if item else None
    if item is None or status == "void":  # a repeat of this release
        return Settlement("void", 0, 0)
    reservation = Reservation(
        request_id, int(item["reservedMicros"]["N"]), item["day"]["S"], item["month"]["S"],
        item["visitor"]["S"], int(item.get("shard", {}).get("N", "0")),
    )  # fmt: skip
    return reconcile(client, table, reservation, actual_micros=actual_micros, now=now, pace=pace)


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
