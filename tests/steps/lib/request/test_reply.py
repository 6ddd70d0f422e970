"""reply.reply_fields reads every reply field the contract defines, and refuses a shape the
response template could not write (synthesis then stops rather than drop the field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steps.lib.request.reply import OPENAPI, ContractShapeError, ReplyField, project, reply_fields


def _response_properties() -> set[str]:
    spec = json.loads(OPENAPI.read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    return {
        name
        for schema_name in ("Answer", "Limited", "DegradedAnswer", "Error")
        for name in schemas[schema_name]["properties"]
    }


def test_every_field_of_every_reply_schema_is_a_reply_field() -> None:
    names = [f.name for f in reply_fields()]
    assert set(names) == _response_properties()
    assert {"reply", "sources", "sig", "limited", "degraded", "off", "error"} <= set(names)
    assert ReplyField("sources", "objects", ("page", "heading", "anchor")) in reply_fields()
    assert ReplyField("off", "true") in reply_fields()
    assert ReplyField("also", "objects", ("page", "title")) in reply_fields()


def test_a_field_the_template_cannot_write_is_refused(tmp_path: Path) -> None:
    spec = json.loads(OPENAPI.read_text(encoding="utf-8"))
    spec["components"]["schemas"]["Answer"]["properties"]["score"] = {"type": "number"}
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ContractShapeError, match="'score'"):
        reply_fields(path)


def test_a_new_string_field_of_the_contract_is_written_without_touching_the_template(
    tmp_path: Path,
) -> None:
    spec = json.loads(OPENAPI.read_text(encoding="utf-8"))
    spec["components"]["schemas"]["Limited"]["properties"]["retryAfter"] = {"type": "string"}
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert ReplyField("retryAfter", "string") in reply_fields(path)


def test_project_keeps_contract_fields_and_drops_the_rest() -> None:
    body = {"reply": "r", "off": True, "degraded": True, "sources": [], "trace": "x"}
    assert project(body) == {"reply": "r", "off": True, "degraded": True, "sources": []}
    assert project({"limited": False, "error": None}) == {"error": ""}
