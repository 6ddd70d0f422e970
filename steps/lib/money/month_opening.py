"""Opening a month: the one write that fixes its shard count, and the upgrade rule.

Every reservation of a month lands under the count recorded on ``GLOBAL``/``SHARDS#<month>``
(ledger_items.py). That record is written once, here, by the month's first reservation,
in a transaction of its own, and never by a reservation's own transaction.

**The upgrade rule.** Code from before counts were recorded (the *old code*) wrote day and
month items with ``costMicros`` but no ``shards`` (a *legacy item*), each shard under
``ceiling // N_old``. A legacy item counts as recorded with the count the old code used:
the month opens with ``L = 1 + the highest shard holding a legacy month item``, whatever
``ceiling_shards`` the new deploy says (that applies from the next month). For the unsharded
``GLOBAL`` item L is 1, exactly the old count; for a sharded old deploy L <= N_old (it wrote
no shard >= N_old). Why the sum still holds: each new shard k < L admits only while its
total stays <= ceiling // L, and whatever the old code put there was admitted under
ceiling // N_old <= ceiling // L; no shard >= L holds legacy spend (the opening's condition
checks every shard that can exist) and no new reservation lands there this month. A legacy
day item always has a legacy month item on its shard (the old code wrote both in one
transaction), so checking the month items covers the days too.

The opening is one TransactWriteItems: an Update of the record under OPENS_ONCE, and a
ConditionCheck of NOT_LEGACY on the month item of every shard >= L that can exist (at most
1 + MAX_SHARDS items, far below DynamoDB's 100). A refusal names the legacy shards, and the
opening is made again with the L they imply; a refusal of the record means another
reservation opened the month first, and its count (returned with the refusal) is the one.
Not covered: old code still *writing* after the new code opened the month (its reservations
in flight during the deploy, or a rollback to it): it checks no record at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..runtime.errors import DependencyUnavailable
from ..runtime.settings import MAX_SHARDS
from .ledger_items import month_expiry, month_key, shards_key

# The record is written once per month: a second opening finds it and takes its count.
OPENS_ONCE = "attribute_not_exists(#shards)"
# A month item the old code wrote carries a total but no count; every other one passes.
NOT_LEGACY = "attribute_not_exists(costMicros) OR attribute_exists(#shards)"


class Cancellation(Protocol):
    """What ledger.py reports of a cancelled transaction (ledger._Cancelled)."""

    def refused(self, names: tuple[str, ...]) -> set[str]: ...

    def old_item(self, names: tuple[str, ...], name: str) -> dict[str, Any] | None: ...


def item_names(checked: range) -> tuple[str, ...]:
    """The items of an opening, in transaction order: the record, then each checked shard."""
    return ("record", *(f"shard{k}" for k in checked))


def opening_items(table: str, month: str, shards: int, checked: range) -> list[dict[str, Any]]:
    """The record written with ``shards`` (OPENS_ONCE), and NOT_LEGACY on the month item of
    every shard in ``checked``, in the order of item_names(checked)."""
    names = {"#shards": "shards"}
    record = {
        "Update": {
            "TableName": table,
            "Key": shards_key(month),
            "UpdateExpression": "SET #shards = :n, expiresAt = :exp",
            "ConditionExpression": OPENS_ONCE,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {
                ":n": {"N": str(shards)},
                ":exp": {"N": str(month_expiry(month))},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }
    checks = [
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": month_key(month, k),
                "ConditionExpression": NOT_LEGACY,
                "ExpressionAttributeNames": names,
            }
        }
        for k in checked
    ]
    return [record, *checks]


def open_month(
    transact: Callable[[list[dict[str, Any]]], Cancellation | None],
    table: str,
    month: str,
    shards: int,
) -> int:
    """Open ``month`` with ``shards``, or with the count its legacy items imply, or find it
    opened; the count every reservation of the month uses. ``transact`` runs one
    TransactWriteItems and returns its cancellation (None when it was written)."""
    count, checked = shards, range(MAX_SHARDS)  # first: is there any legacy item at all?
    for _ in range(MAX_SHARDS + 1):  # each refusal raises L: at most MAX_SHARDS of them
        names = item_names(checked)
        cancelled = transact(opening_items(table, month, count, checked))
        if cancelled is None:
            return count
        refused = cancelled.refused(names)
        if "record" in refused:  # opened by another reservation: its count is the month's
            recorded = (cancelled.old_item(names, "record") or {}).get("shards", {}).get("N")
            if recorded is not None:
                return int(recorded)
        legacy = [k for k in checked if f"shard{k}" in refused]
        if not legacy:
            raise DependencyUnavailable(f"opening {month} was cancelled: {sorted(refused)}")
        count = max(legacy) + 1
        checked = range(count, MAX_SHARDS)
    raise DependencyUnavailable(f"opening {month} did not settle on a shard count")
