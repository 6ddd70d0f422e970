"""The ledger's mark on doctor's message, on moto's DynamoDB: it is added to the message's
own reservation and nothing else (never creating an item), and no visitor can set it: no
step writes that attribute and the request contract refuses a field of that name."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.doctor import message as dm
from steps.lib.money.ledger_items import reservation_key
from steps.lib.request.contract import validate_request
from steps.lib.runtime.errors import BadRequest
from steps.lib.runtime.settings import Settings

from .conftest import TABLE

STEPS = Path(__file__).resolve().parents[2] / "steps"
REQUEST = "c0ffee00-1234-5678-9abc-def012345678"


def settled(dynamodb) -> dict:
    item = {
        **reservation_key(REQUEST),
        "reservedMicros": {"N": "10381"},
        "status": {"S": "settled"},
        "actualMicros": {"N": "2100"},
    }
    dynamodb.put_item(TableName=TABLE, Item=item)
    return item


def test_the_mark_is_added_to_the_messages_reservation_only(dynamodb) -> None:
    before = settled(dynamodb)
    after = dm.mark_reservation(dynamodb, TABLE, REQUEST)
    assert after == {**before, "probe": {"S": "chatguard doctor"}}  # nothing else changed
    assert dm.mark_reservation(dynamodb, TABLE, REQUEST) == after  # again: the same item
    assert dynamodb.scan(TableName=TABLE)["Count"] == 1


def test_no_reservation_creates_nothing(dynamodb) -> None:
    assert dm.mark_reservation(dynamodb, TABLE, REQUEST) is None
    assert dynamodb.scan(TableName=TABLE)["Count"] == 0
    # The naive write (an update without the condition) would have made a reservation up:
    dynamodb.update_item(
        TableName=TABLE,
        Key=reservation_key(REQUEST),
        UpdateExpression="SET probe = :p",
        ExpressionAttributeValues={":p": {"S": dm.PROBE_VALUE}},
    )
    assert dynamodb.scan(TableName=TABLE)["Count"] == 1


def test_no_step_writes_the_mark() -> None:
    sources = list(STEPS.rglob("*.py"))
    assert sources
    for path in sources:
        assert f'"{dm.PROBE_ATTRIBUTE}"' not in path.read_text(encoding="utf-8"), path


def test_a_visitor_cannot_send_the_mark_as_a_field() -> None:
    with pytest.raises(BadRequest):
        validate_request({"message": "hi", dm.PROBE_ATTRIBUTE: dm.PROBE_VALUE}, Settings())
