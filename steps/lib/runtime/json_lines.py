"""The steps' log lines and metrics, written with the standard library.

Each step writes one JSON object per line (``level``, ``message``, ``service``,
``timestamp`` and the invocation's safe fields), which CloudWatch Logs Insights reads as
fields, and its metrics in CloudWatch's embedded metric format: one JSON line on stdout
with an ``_aws`` object naming the namespace, the dimension sets and each metric's unit,
and the values as top-level members ([EMF specification]). Powertools' Logger and Metrics
wrote the same two shapes; importing them cost every cold start about 80 ms of CPU from
source and 35 ms with bytecode (``make bench-cold``, docs/benchmarks.md "Cold path"), in
six steps in a row, for two small formats.

[EMF specification]: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class Stream(Protocol):
    def write(self, text: str, /) -> int: ...


class JsonLogger:
    """One JSON object per line at or above ``level`` (a name in LEVELS; unknown: INFO).

    ``level`` may be a function, asked at every line: the offline runtime keeps one logger
    per step for the process while a terminal command (chat, serve) hides the steps' lines
    for its own duration only (local/commands/render.py, quiet_logs)."""

    def __init__(
        self,
        *,
        service: str,
        level: str | Callable[[], str],
        stream: Stream,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.service, self.stream, self._clock = service, stream, clock
        self._level = level

    @property
    def threshold(self) -> int:
        level = self._level() if callable(self._level) else self._level
        return LEVELS.get(level.upper(), LEVELS["INFO"])

    def info(self, message: str, *, extra: Mapping[str, Any]) -> None:
        self._write("INFO", message, extra)

    def error(self, message: str, *, extra: Mapping[str, Any]) -> None:
        self._write("ERROR", message, extra)

    def _write(self, level: str, message: str, extra: Mapping[str, Any]) -> None:
        if LEVELS[level] < self.threshold:
            return
        stamp = datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="milliseconds")
        line = {"level": level, "message": message, "service": self.service, "timestamp": stamp}
        line.update(extra)
        self.stream.write(json.dumps(line, default=str) + "\n")


class EmfMetrics:
    """Metrics gathered during one invocation, written as one EMF line by ``flush_metrics``."""

    def __init__(
        self,
        *,
        namespace: str,
        service: str,
        stream: Stream,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.namespace, self.service, self.stream, self._clock = namespace, service, stream, clock
        self._pending: dict[str, tuple[str, float]] = {}

    def add_metric(self, *, name: str, unit: str, value: float) -> None:
        self._pending[name] = (unit, value)

    def flush_metrics(self) -> None:
        if not self._pending:
            return
        directive = {
            "Namespace": self.namespace,
            "Dimensions": [["service"]],
            "Metrics": [{"Name": name, "Unit": unit} for name, (unit, _) in self._pending.items()],
        }
        line: dict[str, Any] = {
            "_aws": {"Timestamp": int(self._clock() * 1000), "CloudWatchMetrics": [directive]},
            "service": self.service,
        }
        line.update({name: value for name, (_, value) in self._pending.items()})
        self._pending.clear()
        self.stream.write(json.dumps(line) + "\n")
