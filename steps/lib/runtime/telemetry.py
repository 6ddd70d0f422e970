"""The machinery behind steps/lib/runtime/observability.py: JSON logs, EMF metrics, X-Ray.

The backend is built when observability asks for it (at a handler's import on Lambda, in
the INIT phase; at the first invocation offline). On Lambda: JSON log lines and EMF on
stdout (json_lines.py), X-Ray subsegments for each step and each AWS call
(trace_segments.py); neither Powertools nor the X-Ray SDK, whose imports cost every cold
start more than these formats. Offline: logs on stderr, metrics kept in memory
(``LocalSink``), no X-Ray.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .json_lines import EmfMetrics, JsonLogger

NAMESPACE = "Chatguard"
SERVICE = "chatguard"
COST_FIELDS = frozenset({"cost_micros", "reserved_micros", "released_micros", "actual_micros"})


@dataclass(frozen=True, slots=True)
class Invocation:
    """What one step invocation decided: the record listeners and tests see."""

    step: str
    request_id: str | None
    decision: str | None
    fields: Mapping[str, Any]
    ms: float
    error: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)


def on_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


class LocalSink:
    """Offline stand-in for EMF on stdout: keeps the last few metric sets in memory."""

    emitted: list[dict[str, float]] = []
    limit = 256

    @classmethod
    def add(cls, metrics: Mapping[str, float]) -> None:
        cls.emitted.append(dict(metrics))
        del cls.emitted[: -cls.limit]


class Backend:
    """JSON log lines, EMF metrics and X-Ray subsegments, built once per container."""

    def __init__(self, *, on_lambda: bool) -> None:
        # The level variable keeps Powertools' name, which the local commands already set.
        # On Lambda it is read once; offline at every line, since a terminal command quiets
        # the steps only while it runs and the containers outlive it.
        def level() -> str:
            return os.environ.get("POWERTOOLS_LOG_LEVEL") or "INFO"

        stream = _CurrentStream("stdout" if on_lambda else "stderr")
        self.logger = JsonLogger(
            service=SERVICE, level=level() if on_lambda else level, stream=stream
        )
        self.metrics = self._metrics() if on_lambda else None
        self.xray = self._xray() if on_lambda and _xray_wanted() else None

    @staticmethod
    def _metrics() -> Any:
        return EmfMetrics(namespace=NAMESPACE, service=SERVICE, stream=_CurrentStream("stdout"))

    @staticmethod
    def _xray() -> Any:
        # Subsegments written by hand (trace_segments.py), not the X-Ray SDK: its import and
        # botocore patch cost a cold start more than the few fields we send.
        from .trace_segments import Daemon, Tracer, trace_botocore

        daemon = Daemon(os.environ.get("AWS_XRAY_DAEMON_ADDRESS") or "127.0.0.1:2000")
        tracer = Tracer(daemon.send)
        trace_botocore(tracer)  # every AWS call becomes a timed subsegment of its step
        return tracer

    def started(self, step: str, request_id: str | None) -> None:
        self.logger.info("in", extra={"step": step, "request_id": request_id})

    def segment(self, step: str) -> Any:
        if self.xray is None:
            return _NullSegment()
        return self.xray.in_subsegment(step)

    def finished(self, done: Invocation, segment: Any) -> None:
        line: dict[str, Any] = {
            "step": done.step,
            "request_id": done.request_id,
            "decision": done.decision,
        }
        line.update(done.fields)
        line["ms"] = done.ms
        if done.error:
            self.logger.error("out", extra={**line, "error": done.error})
        else:
            self.logger.info("out", extra=line)
        self._annotate(done, segment)
        self._flush(done.metrics)

    def _annotate(self, done: Invocation, segment: Any) -> None:
        if segment is None or self.xray is None:
            return
        segment.put_annotation("step", done.step)
        segment.put_annotation("decision", done.decision or ("error" if done.error else "none"))
        cost = {k: v for k, v in done.fields.items() if k in COST_FIELDS}
        if cost:
            segment.put_metadata("cost", cost, SERVICE)

    def _flush(self, metrics: Mapping[str, float]) -> None:
        if not metrics:
            return
        if self.metrics is None:
            LocalSink.add(metrics)
            return
        for name, value in metrics.items():
            unit = "Count" if name != "CostMicros" else "None"
            self.metrics.add_metric(name=name, unit=unit, value=value)
        self.metrics.flush_metrics()


class _CurrentStream:
    """Writes to whatever sys.stdout/stderr is at the time (pytest and servers swap them)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, text: str) -> int:
        return int(getattr(sys, self.name).write(text))

    def flush(self) -> None:
        getattr(sys, self.name).flush()


class _NullSegment:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _xray_wanted() -> bool:
    # On Lambda the runtime provides the trace header; CHATGUARD_XRAY=off switches it off.
    return os.environ.get("CHATGUARD_XRAY", "on").lower() != "off"
