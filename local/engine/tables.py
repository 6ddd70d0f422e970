"""The ledger table's shape, for the offline runtime and the tests (CDK declares its own).

One table, `pk` + `sk` strings, on-demand, TTL on `expiresAt`: docs/internals.md.
"""

from __future__ import annotations

from typing import Any


def create_ledger_table(dynamodb: Any, name: str) -> None:
    """Create the table on a (moto) DynamoDB client and switch its TTL on."""
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"},
    )
