"""Logging, metrics and tracing for every step, behind two calls.

Handlers use only ``@instrumented("Quota")`` and ``decision("limited", visitor=..., ...)``;
what sits behind them (Powertools Logger and Metrics, X-Ray annotations, the local trace
recorder) can change without touching a handler. Never pass an IP, a secret or a whole
event to these functions.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_log = logging.getLogger("chatguard")
if not _log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(message)s"))
    _log.addHandler(_handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False

_current: dict[str, Any] = {}


def decision(name: str, **fields: Any) -> None:
    """Record this invocation's decision (and safe fields such as visitor hash, cost)."""
    _current["decision"] = name
    _current.update(fields)


def instrumented(step: str) -> Callable[[F], F]:
    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(event: dict[str, Any], context: Any = None) -> Any:
            _current.clear()
            _current.update(step=step, request_id=_request_id(event))
            started = time.perf_counter()
            try:
                result = handler(event, context)
            except Exception as exc:
                _emit(level=logging.ERROR, error=type(exc).__name__, started=started)
                raise
            _emit(level=logging.INFO, started=started)
            return result

        return run  # type: ignore[return-value]

    return wrap


def _request_id(event: Any) -> str | None:
    return event.get("requestId") if isinstance(event, dict) else None


def _emit(*, level: int, started: float, **extra: Any) -> None:
    record = {**_current, **extra, "ms": round((time.perf_counter() - started) * 1000, 2)}
    _log.log(level, json.dumps(record, default=str, sort_keys=True))
