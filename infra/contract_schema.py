"""The request body schema of the HTTP contract, as API Gateway's model needs it.

steps/lib/request/openapi.json is the contract; API Gateway models are JSON Schema draft 4 with no
``#/components`` to point at, so every ``$ref`` is inlined here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

OPENAPI = Path(__file__).resolve().parents[1] / "steps" / "lib" / "request" / "openapi.json"
DRAFT4 = "http://json-schema.org/draft-04/schema#"
REF_PREFIX = "#/components/schemas/"


def request_schema(path: Path = OPENAPI) -> dict[str, Any]:
    spec = json.loads(path.read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    body = spec["paths"]["/chat"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    inlined = _inline(body, schemas, ())
    return {"$schema": DRAFT4, "title": "ChatRequest", **inlined}


def _inline(node: Any, schemas: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, schemas, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if ref is not None:
        name = ref.removeprefix(REF_PREFIX)
        if not ref.startswith(REF_PREFIX) or name not in schemas:
            raise ValueError(f"unsupported $ref in the contract: {ref}")
        if name in seen:
            raise ValueError(f"recursive $ref cannot be inlined: {' -> '.join((*seen, name))}")
        return _inline(copy.deepcopy(schemas[name]), schemas, (*seen, name))
    return {key: _inline(value, schemas, seen) for key, value in node.items()}
