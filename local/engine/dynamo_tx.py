"""A cheaper rollback for moto's DynamoDB TransactWriteItems.

moto 5.2 backs up the WHOLE table (``copy.deepcopy``) once per item of a transaction, so
it can roll back a cancelled one. The pipeline runs two transactions per message (the
reservation, five items; the settlement, four), so each message copied the table nine
times: fine for a unit test, but a local server slowed down with every message it had ever
answered (a 600-item table already cost about 80 ms per transaction).

Here the table is not copied; instead the items the transaction names are saved before it
runs and put back if it is cancelled. That is the same all-or-nothing result, because the
wire seam (local/engine/wire.py) already makes every DynamoDB call atomic: nothing else can touch
those items in between.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from typing import Any

Saved = list[tuple[str, dict[str, Any], dict[str, Any] | None]]


def install() -> Callable[[], None]:
    """Patch moto's DynamoDB backend; returns the undo."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items
    original_copy = models.copy

    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved = _save(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            _restore(self, saved)
            raise

    models.copy = types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)  # type: ignore[assignment]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]

    def undo() -> None:
        models.DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]
        models.copy = original_copy

    return undo


def _save(backend: Any, transact_items: list[dict[str, Any]]) -> Saved:
    saved: Saved = []
    for entry in transact_items:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue  # moto refuses these before writing anything
        op = next(iter(entry.values()))
        try:
            table = backend.get_table(op["TableName"])
            key = _key(table, op)
            item = backend.get_item(op["TableName"], key)
        except Exception:
            continue  # an unknown table or a malformed key: moto fails it, nothing to save
        attrs = copy.deepcopy(item.to_json()["Attributes"]) if item is not None else None
        saved.append((op["TableName"], key, attrs))
    return saved


def _key(table: Any, op: dict[str, Any]) -> dict[str, Any]:
    if "Key" in op:
        return dict(op["Key"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _restore(backend: Any, saved: Saved) -> None:
    for table_name, key, attrs in reversed(saved):
        table = backend.get_table(table_name)
        if attrs is not None:
            table.put_item(attrs)
            continue
        hash_key, range_key = backend.get_keys_value(table, key)
        if table.get_item(hash_key, range_key) is not None:
            table.delete_item(hash_key, range_key)
