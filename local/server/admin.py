"""The local server's operator API (``/_admin/*``, loopback callers only).

`chatguard spend|mode|rotate|trace last --local URL` call these routes; each one runs the
same function the AWS side runs (ops/), with the local runtime's moto clients:

    GET|POST /_admin/spend       {"day"?, "month"?}            -> the spend report
    GET      /_admin/mode                                      -> {"mode"}
    POST     /_admin/mode        {"mode"}                      -> {"mode", "previous", "changed"}
    POST     /_admin/rotate      {"secret", "dry_run"?, "force"?} -> the rotation result
    GET      /_admin/trace/last                                -> the last request's waterfall
"""

from __future__ import annotations

import time
from typing import Any

from local.engine.tracing import Trace, recorder
from ops import mode, rotate, spend
from steps.lib.runtime.errors import ChatguardError

Answer = tuple[int, dict[str, Any]]


def handle(method: str, path: str, body: dict[str, Any] | None, runtime: Any) -> Answer:
    route = _ROUTES.get(path.split("?", 1)[0].rstrip("/"))
    if route is None:
        return 404, {"error": f"no admin route {path}"}
    methods, function = route
    if method not in methods:
        return 405, {"error": f"{path} takes {' or '.join(methods)}"}
    try:
        return 200, function(body or {}, runtime)
    except rotate.RotationRefused as exc:
        return 409, {"error": str(exc)}
    except (ValueError, ChatguardError) as exc:  # ModeError, SettingsError, bad arguments
        return 400, {"error": str(exc)}


def _spend(body: dict[str, Any], runtime: Any) -> dict[str, Any]:
    day, month = body.get("day") or spend.today(), body.get("month")
    spend.check_period(day, month)
    s = runtime.settings
    return dict(spend.collect(runtime.dynamodb, s.table_name, s, day=day, month=month))


def _mode(body: dict[str, Any], runtime: Any) -> dict[str, Any]:
    table = runtime.settings.table_name
    if "mode" not in body:
        return {"mode": mode.read(runtime.dynamodb, table)}
    return dict(mode.write(runtime.dynamodb, table, str(body["mode"])))


def _rotate(body: dict[str, Any], runtime: Any) -> dict[str, Any]:
    kind = body.get("secret")
    if kind not in rotate.PARAMETERS:
        raise ValueError(f"secret must be one of {', '.join(rotate.PARAMETERS)}")
    return rotate.run(
        runtime.ssm, kind, runtime.settings, now=time.time(), dry_run=bool(body.get("dry_run")),
        force=bool(body.get("force")), edge=_LocalEdge(runtime), say=lambda _: None,
    )  # fmt: skip


def _trace_last(body: dict[str, Any], runtime: Any) -> dict[str, Any]:
    trace = recorder().last()
    if trace is None:
        return {"request_id": None, "spans": []}
    return {"request_id": trace.request_id, "status": trace.status, "ms": round(trace.ms, 2),
            "spans": trace_spans(trace)}  # fmt: skip


def trace_spans(trace: Trace) -> list[dict[str, Any]]:
    """Steps and the AWS calls inside them, as waterfall rows offset from the first step."""
    origin = min((step.at for step in trace.steps if step.at), default=0.0)
    spans: list[dict[str, Any]] = []
    cursor = 0.0  # records without a start time follow the previous one
    for step in trace.steps:
        start = (step.at - origin) * 1000 if step.at else cursor
        fields = dict(step.fields)
        spans.append({"depth": 0, "name": step.state, "start_ms": round(start, 3),
                      "ms": round(step.ms, 3), "note": _note(step.decision, fields),
                      "fields": fields})  # fmt: skip
        for call in step.calls:
            at = (call.at - origin) * 1000 if call.at else start
            name = f"{call.service} {call.operation}"
            spans.append({"depth": 1, "name": name, "start_ms": round(at, 3),
                          "ms": round(call.ms, 3), "note": ""})  # fmt: skip
        cursor = start + step.ms
    return spans


def _note(decision: str, fields: dict[str, Any]) -> str:
    shown = [f"{k}={str(v)[:12]}" for k, v in fields.items() if v is not None]
    return decision + (" (" + ", ".join(shown) + ")" if shown else "")


class _LocalEdge:
    """The local stand-in for CloudFront's copy of the origin secret."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def targets(self) -> list[str]:
        return ["the local edge (POST /chat)"]

    def wait(self) -> None:
        # Offline, "wait out every container's secret cache" is: empty this process's cache.
        from steps.lib.runtime import secrets

        secrets.cache_clear()

    def update(self, value: str) -> list[str]:
        # The runtime keeps the value its in-process edge injects; replace it (no setter yet).
        self.runtime._secrets[self.runtime.settings.origin_secret_param] = value
        return ["local edge"]


_ROUTES = {
    "/_admin/spend": (("GET", "POST"), _spend),
    "/_admin/mode": (("GET", "POST"), _mode),
    "/_admin/rotate": (("POST",), _rotate),
    "/_admin/trace/last": (("GET",), _trace_last),
}
