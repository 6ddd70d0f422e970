"""Logging, metrics and tracing for every step, behind two calls.

Handlers use only ``@instrumented("Quota")`` and ``decision("limited", visitor=..., ...)``;
what sits behind them can change without touching a handler:

- JSON log lines (json_lines.py): one in and one out per invocation (request_id, step,
  decision, visitor hash, cost in micro-USD, ms). Fields are sanitised here, so a careless
  call cannot log an IP, a secret or a whole event.
- EMF metrics (json_lines.py): namespace ``Chatguard``, one metric per decision (METRICS).
- X-Ray (trace_segments.py, without the X-Ray SDK): one subsegment per step with the
  annotations ``step`` and ``decision`` (filterable) and the cost fields as metadata.

On Lambda, ``instrumented`` builds the backend (log, metrics, X-Ray tracer) when the
handler module is imported, in the INIT phase, so the first invocation does not pay for
it; offline it is built on the first invocation (tests and the local runtime change the
environment between imports and calls). Offline X-Ray is never loaded, metrics stay in
memory instead of printing EMF to stdout, and logs go to stderr at ``POWERTOOLS_LOG_LEVEL``
(default INFO; the local commands set CRITICAL for a quiet terminal). Listeners (the local
trace recorder) get the same per-step records.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from .errors import SettingsError
from .init_phase import at_init
from .telemetry import COST_FIELDS, NAMESPACE, SERVICE, Backend, Invocation, LocalSink, on_lambda

__all__ = ["COST_FIELDS", "METRICS", "NAMESPACE", "SERVICE", "Invocation", "Listener"]

F = TypeVar("F", bound=Callable[..., Any])

METRICS = (
    "OriginRejected",
    "QuotaLimited",
    "Degraded",
    "FailClosed",
    "ModelCalls",
    "CostMicros",
    "ReservationOpen",
    "CountTokensFailed",
    "GuardrailBlocked",
)
# (step, decision) -> counted metric; "*" matches any decision of that step. Degraded is
# counted where the visitor is actually served a degraded answer (S7, or mode "off" in S3),
# so one request never counts twice.
_COUNTED: Mapping[tuple[str, str], str] = {
    ("OriginVerify", "forbidden"): "OriginRejected",
    ("Quota", "limited"): "QuotaLimited",
    ("CostGate", "off"): "Degraded",
    ("Degraded", "*"): "Degraded",
    ("Invoke", "blocked"): "GuardrailBlocked",  # assessed, then no model call
    ("Invoke", "*"): "ModelCalls",
}
# An exception in these steps leaves a reservation standing (over-counts, never under);
# anywhere else it means the request failed closed.
_RESERVATION_STEPS = frozenset({"Invoke", "Reconcile"})
# Field names that must never reach a log line, whatever a caller passes.
_FORBIDDEN_KEY_PARTS = ("ip", "address", "secret", "salt", "key", "sig", "body", "event")
_FORBIDDEN_KEYS = frozenset({"message", "history", "text", "reply", "headers", "token"})
_MAX_TEXT = 96


class Listener(Protocol):
    def step_started(self, step: str, request_id: str | None) -> None: ...

    def step_finished(self, invocation: Invocation) -> None: ...


_state = threading.local()
_listeners: list[Listener] = []


def decision(name: str, **fields: Any) -> None:
    """Record this invocation's decision (and safe fields such as visitor hash, cost)."""
    current = _current()
    current["decision"] = name
    current["fields"].update(fields)


def instrumented(step: str) -> Callable[[F], F]:
    at_init(_backend)

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(event: dict[str, Any], context: Any = None) -> Any:
            request_id = _request_id(event)
            _state.current = {"decision": None, "fields": {}}
            backend = _backend()
            backend.started(step, request_id)
            _notify("step_started", step, request_id)
            started = time.perf_counter()
            error: str | None = None
            try:
                with backend.segment(step) as segment:
                    try:
                        return handler(event, context)
                    except Exception as exc:
                        error = type(exc).__name__
                        if isinstance(exc, SettingsError):
                            # The one line an operator needs: which setting is wrong and why
                            # (settings hold limits and names, never secret values).
                            _current()["fields"]["problem"] = str(exc)
                        raise
                    finally:
                        done = _finish(step, request_id, started, error)
                        backend.finished(done, segment)
                        _notify("step_finished", done)
            finally:
                _state.current = None

        return run  # type: ignore[return-value]

    return wrap


def add_listener(listener: Listener) -> None:
    """Let a recorder (the local trace) see each step; safe to call twice."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def metrics_for(
    step: str, decision_name: str | None, fields: Mapping[str, Any], error: str | None
) -> dict[str, float]:
    """The EMF metrics one invocation emits (pure, so the mapping is testable alone)."""
    if error is not None:
        # NotSent: S5 refused before sending anything; the reservation is released.
        stands = step in _RESERVATION_STEPS and error != "NotSent"
        return {("ReservationOpen" if stands else "FailClosed"): 1}
    out: dict[str, float] = {}
    name = _COUNTED.get((step, decision_name or "")) or _COUNTED.get((step, "*"))
    if name:
        out[name] = 1
    if fields.get("count_failed") is True:  # S5 metered by the byte bound instead
        out["CountTokensFailed"] = 1
    cost = fields.get("cost_micros")
    # Only a fresh settlement adds spend: "already_settled" (a replay) must not count twice.
    settles = step == "Reconcile" and decision_name in ("settled", "released")
    if settles and isinstance(cost, int):
        out["CostMicros"] = int(cost)
    return out


def safe_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Scalars only, never an IP, a secret-looking key or client text; long strings cut."""
    clean: dict[str, Any] = {}
    for key, value in fields.items():
        if value is None or isinstance(value, bool | int | float):
            clean[key] = value  # a number or a flag cannot carry an address or a secret
        elif isinstance(value, str) and not _forbidden_key(key.lower()):
            clean[key] = "[redacted-ip]" if _looks_like_ip(value) else value[:_MAX_TEXT]
    return clean


def local_metrics() -> list[dict[str, float]]:
    """Offline, the metrics each invocation would have emitted (newest last, bounded)."""
    return list(LocalSink.emitted)


def reset() -> None:
    """Forget the backend (tests and the local runtime call this after changing env)."""
    _backend.cache_clear()
    LocalSink.emitted.clear()


def _forbidden_key(key: str) -> bool:
    return key in _FORBIDDEN_KEYS or any(p in key.split("_") for p in _FORBIDDEN_KEY_PARTS)


def _current() -> dict[str, Any]:
    current: dict[str, Any] | None = getattr(_state, "current", None)
    if current is None:  # decision() outside a handler: keep it, never crash
        current = _state.current = {"decision": None, "fields": {}}
    return current


def _finish(step: str, request_id: str | None, started: float, error: str | None) -> Invocation:
    current = _current()
    fields = safe_fields(current["fields"])
    return Invocation(
        step=step,
        request_id=request_id,
        decision=current["decision"],
        fields=fields,
        ms=round((time.perf_counter() - started) * 1000, 2),
        error=error,
        metrics=metrics_for(step, current["decision"], current["fields"], error),
    )


def _request_id(event: Any) -> str | None:
    value = event.get("requestId") if isinstance(event, dict) else None
    return value[:_MAX_TEXT] if isinstance(value, str) else None


def _looks_like_ip(value: str) -> bool:
    candidate = value.strip("[]")
    host = candidate.rsplit(":", 1)[0].strip("[]") if candidate.count(":") == 1 else candidate
    for text in (candidate, host):
        try:
            ipaddress.ip_address(text)
            return True
        except ValueError:
            continue
    return False


def _notify(method: str, *args: Any) -> None:
    for listener in list(_listeners):
        try:
            getattr(listener, method)(*args)
        except Exception:  # a recorder's bug must never change a step's outcome
            logging.getLogger(SERVICE).debug("listener failed", exc_info=True)


@functools.cache
def _backend() -> Backend:
    return Backend(on_lambda=on_lambda())
