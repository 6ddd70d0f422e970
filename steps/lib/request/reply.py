"""The reply contract: every field a /chat answer can carry, read from openapi.json, and
the one rule that turns an execution's ``body`` into what the client receives.

API Gateway's integration response (infra/vtl.py) writes the body field by field, since
Velocity cannot serialize a parsed object; a field the template does not name never reaches
the client. So the template is generated from `reply_fields`, which reads every response
schema of the contract: a field added to openapi.json passes on AWS without anyone
remembering the template. The local server answers through `project`, the same rule in
Python; tests/infra/test_reply_contract.py renders every reply the workflow can produce on
the real Velocity engine and checks both bodies equal.

The rule, per kind: a string field present is written (null as ""); a ``true`` flag only
when it is true; a list of objects with each item's named string fields (null as "").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

OPENAPI = Path(__file__).with_name("openapi.json")
_REF = "#/components/schemas/"

Kind = Literal["string", "true", "objects"]


class ContractShapeError(ValueError):
    """A reply field whose schema the response template has no way to write."""


@dataclass(frozen=True, slots=True)
class ReplyField:
    name: str
    kind: Kind
    item_fields: tuple[str, ...] = ()  # "objects": the string fields of each item


@cache
def reply_fields(path: Path = OPENAPI) -> tuple[ReplyField, ...]:
    """Every property of every response schema of POST /chat, in the contract's order."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    post = spec["paths"]["/chat"]["post"]
    fields: dict[str, ReplyField] = {}
    for response in post["responses"].values():
        if "$ref" in response:
            response = spec["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
        schema = response["content"]["application/json"]["schema"]
        for variant in schema.get("oneOf", [schema]):
            for name, prop in _resolve(variant, schemas).get("properties", {}).items():
                field = _field(name, _resolve(prop, schemas), schemas)
                if fields.setdefault(name, field) != field:
                    raise ContractShapeError(f"reply field {name!r} has two different shapes")
    return tuple(fields.values())


def _resolve(node: Mapping[str, Any], schemas: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    if not str(ref).startswith(_REF) or ref.removeprefix(_REF) not in schemas:
        raise ContractShapeError(f"unsupported $ref in the reply contract: {ref}")
    return _resolve(schemas[ref.removeprefix(_REF)], schemas)


def _field(name: str, prop: Mapping[str, Any], schemas: Mapping[str, Any]) -> ReplyField:
    kind = prop.get("type")
    if kind == "string":
        return ReplyField(name, "string")
    if kind == "boolean" and prop.get("enum") == [True]:
        return ReplyField(name, "true")
    if kind == "array":
        item = _resolve(prop.get("items", {}), schemas)
        props = item.get("properties", {})
        if item.get("type") == "object" and all(
            _resolve(p, schemas).get("type") == "string" for p in props.values()
        ):
            return ReplyField(name, "objects", tuple(props))
    raise ContractShapeError(
        f"reply field {name!r}: the response template writes strings, true flags and lists "
        "of objects of strings; teach steps/lib/request/reply.py and infra/vtl.py this shape"
    )


def project(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the client receives for an execution's ``body`` (infra/vtl.py's rule)."""
    out: dict[str, Any] = {}
    for field in reply_fields():
        if field.kind == "true":
            if body.get(field.name) is True:
                out[field.name] = True
        elif field.name not in body:
            continue
        elif field.kind == "string":
            out[field.name] = _text(body[field.name])
        else:
            items = body[field.name]
            out[field.name] = [
                {
                    key: _text(item.get(key) if isinstance(item, Mapping) else None)
                    for key in field.item_fields
                }
                for item in (items if isinstance(items, list) else [])
            ]
    return out


def _text(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)
