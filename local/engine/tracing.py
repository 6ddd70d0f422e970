"""The local trace recorder: what each step of one execution decided, how long it took,
and which AWS calls it made.

The in-process Lambda dispatcher opens a step (``recorder().step(...)``) around every
handler call; the wire seam (local/engine/wire.py) attributes each emulated AWS call to the step
open on the calling thread. Every step of one execution runs on that execution's thread,
so a thread-local "current step" is exact even with many executions in flight.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from steps.lib.runtime import observability


@dataclass(frozen=True, slots=True)
class AwsCall:
    service: str  # "dynamodb", "ssm", "bedrock-runtime", ...
    operation: str  # "UpdateItem", "GetParameter", "Converse", ...
    ms: float
    at: float = 0.0  # perf_counter() when the call started: the waterfall's offset


@dataclass(frozen=True, slots=True)
class StepRecord:
    state: str
    decision: str
    ms: float
    calls: tuple[AwsCall, ...] = ()
    at: float = 0.0  # perf_counter() when the step started
    fields: tuple[tuple[str, Any], ...] = ()  # the step's safe decision fields (observability)

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "decision": self.decision,
            "ms": round(self.ms, 2),
            "calls": [f"{c.service}.{c.operation}" for c in self.calls],
        }


@dataclass(frozen=True, slots=True)
class Trace:
    request_id: str
    status: int
    ms: float
    steps: tuple[StepRecord, ...]


@dataclass(slots=True)
class _OpenStep:
    state: str
    started: float = field(default_factory=time.perf_counter)
    decision: str = "error"
    calls: list[AwsCall] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)

    def close(self) -> StepRecord:
        ms = (time.perf_counter() - self.started) * 1000
        fields = tuple(sorted(self.fields.items()))
        return StepRecord(self.state, self.decision, ms, tuple(self.calls), self.started, fields)


class Recorder:
    """Per-request step records; keeps the last few finished traces for `last()`."""

    def __init__(self, keep: int = 50) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, list[StepRecord]] = {}
        self._done: deque[Trace] = deque(maxlen=keep)
        self._local = threading.local()

    @contextmanager
    def step(self, request_id: str, state: str) -> Iterator[_OpenStep]:
        """Time one handler call; the caller sets `.decision` on the yielded step."""
        current = _OpenStep(state)
        previous = getattr(self._local, "step", None)
        self._local.step = current
        try:
            yield current
        finally:
            self._local.step = previous
            record = current.close()
            with self._lock:
                self._open.setdefault(request_id, []).append(record)

    def note_call(self, service: str, operation: str, ms: float) -> None:
        """Attribute one AWS call to the step open on this thread (if any)."""
        current: _OpenStep | None = getattr(self._local, "step", None)
        if current is not None:
            current.calls.append(AwsCall(service, operation, ms, time.perf_counter() - ms / 1000))

    # -- an observability listener: the same fields a step logs on Lambda ----------------
    def step_started(self, step: str, request_id: str | None) -> None:
        return None

    def step_finished(self, invocation: Any) -> None:
        current: _OpenStep | None = getattr(self._local, "step", None)
        if current is not None and current.state == invocation.step:
            current.fields.update(invocation.fields)

    def current_state(self) -> str | None:
        current: _OpenStep | None = getattr(self._local, "step", None)
        return current.state if current else None

    def finish(
        self, request_id: str, status: int, ms: float, extra: tuple[StepRecord, ...] = ()
    ) -> Trace:
        with self._lock:
            steps = tuple(self._open.pop(request_id, [])) + extra
            trace = Trace(request_id, status, ms, steps)
            self._done.append(trace)
        return trace

    def last(self) -> Trace | None:
        with self._lock:
            return self._done[-1] if self._done else None

    def clear(self) -> None:
        with self._lock:
            self._open.clear()
            self._done.clear()


_RECORDER = Recorder()
observability.add_listener(_RECORDER)


def recorder() -> Recorder:
    """The process's recorder (one local runtime per process)."""
    return _RECORDER
