"""TEST harness: the reservation as the code before recorded shard counts made it (the
*old code* of an upgrade). Its day and month items carry a total but no ``shards``: the
condition is the total's alone (TOTAL_ADMITS under ``ceiling // N``), the update adds the
reserve and nothing else. Settling is unchanged between the versions (ledger.reconcile)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from steps.lib.money import ledger
from steps.lib.money.ledger_items import TOTAL_ADMITS, reservation_items

OLD_UPDATE = "ADD costMicros :r SET expiresAt = if_not_exists(expiresAt, :exp)"


def old_items(table: str, shard: int, **reservation: Any) -> list[dict[str, Any]]:
    items = reservation_items(table, shard=shard, **reservation)
    for item in items[:2]:  # the day and the month: no count checked, none written
        update = item["Update"]
        update["UpdateExpression"] = OLD_UPDATE
        update["ConditionExpression"] = TOTAL_ADMITS
        update.pop("ExpressionAttributeNames")
        update["ExpressionAttributeValues"].pop(":n")
    return items


def old_reserve(
    client: Any, table: str, *, request_id: str, visitor: str, day: str, micros: int,
    ceilings: ledger.Ceilings, now: float,
) -> ledger.Reservation | None:  # fmt: skip
    """The old code's reservation: its shard first, then the others; None when refused."""
    # The old code refused a reserve above a shard's share before writing, as the new code
    # does (ledger.py): an item not written yet passes attribute_not_exists whatever :max is.
    # Without it this harness admitted 900 on an empty 500 share (four shards of 2,000), and
    # the upgrade property failed before any upgrade.
    if micros > min(ceilings.day_shard, ceilings.month_shard, ceilings.visitor):
        return None
    for shard in ledger.shard_order(request_id, ceilings.shards):
        items = old_items(table, shard, request_id=request_id, visitor=visitor, day=day,
                          reserve=micros, ceilings=ceilings, now=now)  # fmt: skip
        try:
            client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if reasons[:2] != ["None", "None"] and reasons[2:] == ["None"] * 3:
                continue  # this shard's day or month is spent: the next one
            return None
        month = ledger.month_of(day)
        return ledger.Reservation(request_id, micros, day, month, visitor, shard)
    return None
