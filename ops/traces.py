"""`chatguard traces [--since 1h] [--decision degraded] [--step CostGate] [--trace-id ID]`.

X-Ray trace summaries filtered on the annotations every step writes (``step`` and
``decision``), then a per-step waterfall of one trace: each Lambda segment, the step's
subsegment with its decision, and each AWS call (DynamoDB, SSM, Bedrock) inside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from .render import table
from .waterfall import Span

_DURATION = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
MAX_LOOKBACK = timedelta(hours=24)  # X-Ray's GetTraceSummaries window is at most 24 hours


def parse_since(text: str) -> timedelta:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"--since takes a duration like 30m, 1h or 6h, not {text!r}")
    delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if not timedelta(0) < delta <= MAX_LOOKBACK:
        raise ValueError("--since must be more than 0 and at most 24h (an X-Ray limit)")
    return delta


def filter_expression(*, decision: str | None = None, step: str | None = None) -> str | None:
    """The X-Ray filter on our annotations; names are checked, so nothing can be injected."""
    parts = []
    for key, value in (("step", step), ("decision", decision)):
        if value is None:
            continue
        if not _NAME.match(value):
            raise ValueError(f"--{key} takes a name like CostGate or degraded, not {value!r}")
        parts.append(f'annotation.{key} = "{value}"')
    return " AND ".join(parts) or None


def summaries(
    xray: Any, *, since: timedelta, expression: str | None, now: datetime | None = None
) -> list[dict[str, Any]]:
    end = now or datetime.now(UTC)
    kwargs: dict[str, Any] = {"StartTime": end - since, "EndTime": end, "Sampling": False}
    if expression:
        kwargs["FilterExpression"] = expression
    found: list[dict[str, Any]] = []
    while True:
        page = xray.get_trace_summaries(**kwargs)
        found += page.get("TraceSummaries", [])
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def render_summaries(found: list[dict[str, Any]]) -> str:
    rows = [
        [
            s["Id"],
            f"{s.get('Duration', 0):.3f}s",
            "fault" if s.get("HasFault") else "error" if s.get("HasError") else "ok",
            _annotations(s.get("Annotations", {})),
        ]
        for s in found
    ]
    return table(["trace", "duration", "status", "annotations"], rows) if rows else "  (no traces)"


def trace_spans(xray: Any, trace_id: str) -> list[Span]:
    traces = xray.batch_get_traces(TraceIds=[trace_id]).get("Traces", [])
    if not traces:
        raise LookupError(f"trace {trace_id} not found (X-Ray keeps traces 30 days)")
    documents = [json.loads(segment["Document"]) for segment in traces[0].get("Segments", [])]
    documents.sort(key=lambda d: d.get("start_time", 0))
    origin = min((d.get("start_time", 0) for d in documents), default=0)
    return [span for doc in documents for span in _walk(doc, 0, origin)]


def _walk(doc: dict[str, Any], depth: int, origin: float) -> Iterator[Span]:
    start = doc.get("start_time", origin)
    end = doc.get("end_time") or start
    yield Span(depth, _name(doc), (start - origin) * 1000, (end - start) * 1000, _note(doc))
    children = sorted(doc.get("subsegments", []), key=lambda d: d.get("start_time", 0))
    for child in children:
        yield from _walk(child, depth + 1, origin)


def _name(doc: dict[str, Any]) -> str:
    operation = (doc.get("aws") or {}).get("operation")
    return f"{doc.get('name', '?')} {operation}" if operation else str(doc.get("name", "?"))


def _note(doc: dict[str, Any]) -> str:
    annotations = doc.get("annotations") or {}
    note = str(annotations.get("decision", ""))
    if doc.get("fault") or doc.get("error"):
        note = (note + " " if note else "") + ("FAULT" if doc.get("fault") else "ERROR")
    return note


def _annotations(raw: dict[str, Any]) -> str:
    pairs = []
    for key in sorted(raw):
        values = [str(next(iter(v.get("AnnotationValue", {}).values()), "")) for v in raw[key]]
        pairs.append(f"{key}={'/'.join(sorted(set(values)))}")
    return " ".join(pairs)
