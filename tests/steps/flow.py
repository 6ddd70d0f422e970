"""A small Python mirror of chat.asl.json's routing, for handler-level invariant tests.

The real state machine runs on moto's engine in tests/local; this mirror lets the library
tests count calls per stage without the engine. It follows the ASL's Choice and Catch rules.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from steps import cost_gate, degraded, invoke, origin_verify, quota, reconcile, retrieve

from .conftest import ORIGIN

FAIL_CLOSED = {"error": "fail closed"}


@dataclass
class Run:
    status: int = 0
    body: dict[str, Any] = field(default_factory=dict)
    states: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


class _Done(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body


class _Execution:
    def __init__(self) -> None:
        self.run = Run()
        self.request_id = str(uuid.uuid4())

    def step(self, name: str, handler: Any, event: dict[str, Any], *, fail: int = 503) -> Any:
        """Run one Task; an exception is caught like the ASL's Catch on States.ALL."""
        self.run.states.append(name)
        try:
            return handler({"requestId": self.request_id, **event}, None)
        except Exception as exc:
            self.run.errors[name] = type(exc).__name__
            if fail:
                raise _Done(fail, FAIL_CLOSED) from exc
            return None

    def gate(self, result: dict[str, Any], allowed: str) -> None:
        if result["decision"] != allowed and "response" in result:
            raise _Done(result["response"]["statusCode"], result["response"]["body"])


def send(body: Any, address: str = "203.0.113.7:4000", origin: str = ORIGIN) -> Run:
    ex = _Execution()
    try:
        _answer(ex, body, address, origin)
    except _Done as done:
        ex.run.status, ex.run.body = done.status, done.body
    return ex.run


def _releasing(
    ex: _Execution,
    name: str,
    handler: Any,
    event: dict[str, Any],
    release: dict[str, Any],
    only: str | None = None,
) -> Any:
    """A Task whose Catch goes to ReleaseReservation (any error, or only the class `only`)
    and then FailClosed: nothing billable beyond the embedding happened."""
    try:
        return ex.step(name, handler, event)
    except _Done:
        if only is None or ex.run.errors[name] == only:
            ex.step("ReleaseReservation", reconcile.handler, release, fail=0)
        raise


def _answer(ex: _Execution, body: Any, address: str, origin: str) -> None:
    o = ex.step("OriginVerify", origin_verify.handler, {"originVerify": origin, "body": body})
    ex.gate(o, "allowed")
    q = ex.step("Quota", quota.handler, {"viewerAddress": address})
    ex.gate(q, "allowed")
    try:
        g = ex.step(
            "CostGate",
            cost_gate.handler,
            {"visitor": q["visitor"], "day": q["day"], "request": o["request"]},
        )
    except _Done:  # CostGate's Catch: the release by request id, then FailClosed
        ex.step("ReleaseCutReservation", reconcile.handler, {"release": True}, fail=0)
        raise
    ex.gate(g, "reserved")
    if g["decision"] == "degraded":
        d = ex.step("Degraded", degraded.handler, {"request": o["request"], "reason": g["reason"]})
        raise _Done(d["statusCode"], d["body"])
    release = {"reservation": g["reservation"], "release": True}
    r = _releasing(
        ex,
        "Retrieve",
        retrieve.handler,
        {"request": o["request"], "day": g["reservation"]["day"]},
        release,
    )
    invoke_event = {
        "request": o["request"],
        "grounding": r["grounding"],
        "reservation": g["reservation"],
        "embeddingTokens": r["embeddingTokens"],
    }
    a = _releasing(ex, "Invoke", invoke.handler, invoke_event, release, only="NotSent")
    settle = {
        "reservation": g["reservation"],
        "usage": a["usage"],
        "embeddingTokens": r["embeddingTokens"],
        "guardrailTextUnits": a["guardrailTextUnits"],
        "invokeCostMicros": a["costMicros"],
    }
    ex.step("Reconcile", reconcile.handler, settle, fail=0)  # a failure still answers
    raise _Done(200, {"reply": a["reply"], "sources": r["sources"], "sig": a["sig"]})
