"""X-Ray subsegments written here and sent to the X-Ray daemon, without the X-Ray SDK.

Each step writes what ``chatguard traces`` reads (ops/traces.py): one subsegment per
invocation, named after the step, with the annotations ``step`` and ``decision`` and the
cost fields as metadata, and inside it one subsegment per AWS call (service name,
``aws.operation``, error or fault). The X-Ray SDK did the same, but importing it and
patching botocore cost every cold start about a fifth of a second of CPU from source
(``make bench-cold``, docs/benchmarks.md "Cold path") for these few fields.

The format is AWS's: a subsegment sent on its own carries ``type: "subsegment"``, its
``trace_id`` and its parent's id (``parent_id``), and goes to the daemon as one UDP datagram
of the header ``{"format": "json", "version": 1}``, a newline and the document
([Sending trace data to X-Ray]). On Lambda the parent is the function's segment, named by
``Parent`` in ``_X_AMZN_TRACE_ID``, and the daemon's address is ``AWS_XRAY_DAEMON_ADDRESS``
([Lambda environment variables]); nothing is sent unless that header says ``Sampled=1``.
A failure here never reaches the step: tracing is best effort, as the SDK's was.

[Sending trace data to X-Ray]: https://docs.aws.amazon.com/xray/latest/devguide/xray-api-sendingdata.html
[Lambda environment variables]: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

HEADER = b'{"format": "json", "version": 1}\n'
_LOG = logging.getLogger("chatguard")


@dataclass(frozen=True, slots=True)
class TraceHeader:
    trace_id: str
    parent_id: str
    sampled: bool

    @classmethod
    def parse(cls, raw: str | None) -> TraceHeader | None:
        """``Root=1-...;Parent=...;Sampled=1`` (Lambda's ``_X_AMZN_TRACE_ID``), or None."""
        fields = dict(part.split("=", 1) for part in (raw or "").split(";") if "=" in part)
        root, parent = fields.get("Root"), fields.get("Parent")
        if not root or not parent:
            return None
        return cls(root, parent, fields.get("Sampled") == "1")


class Subsegment:
    """One subsegment document, closed and sent once."""

    def __init__(self, name: str, trace_id: str, parent_id: str, clock: Callable[[], float]):
        self._clock = clock
        self.doc: dict[str, Any] = {
            "name": name,
            "id": os.urandom(8).hex(),
            "trace_id": trace_id,
            "parent_id": parent_id,
            "type": "subsegment",
            "start_time": clock(),
        }

    def put_annotation(self, key: str, value: str) -> None:
        self.doc.setdefault("annotations", {})[key] = value

    def put_metadata(self, key: str, value: Any, namespace: str) -> None:
        self.doc.setdefault("metadata", {}).setdefault(namespace, {})[key] = value

    def close(self, *, error: bool = False, fault: bool = False) -> dict[str, Any]:
        self.doc["end_time"] = self._clock()
        if fault:
            self.doc["fault"] = True
        elif error:
            self.doc["error"] = True
        return self.doc


class Daemon:
    """The X-Ray daemon's UDP socket (``host:port``)."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self._to = (host, int(port))
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send(self, doc: dict[str, Any]) -> None:
        try:
            self._socket.sendto(HEADER + json.dumps(doc, default=str).encode(), self._to)
        except OSError:
            _LOG.debug("trace segment not sent", exc_info=True)


class Tracer:
    """The step's subsegment per invocation, and one per AWS call made inside it."""

    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        header: Callable[[], str | None] = lambda: os.environ.get("_X_AMZN_TRACE_ID"),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._send, self._header, self._clock = send, header, clock
        self._current: Subsegment | None = None

    @contextmanager
    def in_subsegment(self, name: str) -> Iterator[Subsegment | None]:
        header = TraceHeader.parse(self._header())
        if header is None or not header.sampled:
            yield None
            return
        segment = self._current = Subsegment(name, header.trace_id, header.parent_id, self._clock)
        failed = False
        try:
            yield segment
        except BaseException:
            failed = True
            raise
        finally:
            self._current = None
            self._send(segment.close(fault=failed))

    def aws_call(self, service: str, operation: str, call: Callable[[], Any]) -> Any:
        parent = self._current
        if parent is None:
            return call()
        doc = parent.doc
        segment = Subsegment(service, doc["trace_id"], doc["id"], self._clock)
        segment.doc.update(namespace="aws", aws={"operation": operation})
        error = fault = False
        try:
            return call()
        except Exception as exc:
            status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            error = isinstance(status, int) and status < 500
            fault = not error
            raise
        finally:
            self._send(segment.close(error=error, fault=fault))


_active: list[Tracer] = []  # the tracer botocore's calls report to (the latest installed)


def trace_botocore(tracer: Tracer) -> None:
    """Every botocore client's API call becomes a subsegment of the current step's (process-
    wide, as the SDK's patch was; clients built before this are covered too)."""
    from botocore.client import BaseClient

    _active[:] = [tracer]
    original: Callable[..., Any] = BaseClient._make_api_call
    if getattr(original, "_chatguard_traced", False):
        return

    def traced(client: Any, operation: str, params: Any) -> Any:
        service = client.meta.service_model.endpoint_prefix

        def send() -> Any:
            return original(client, operation, params)

        return _active[0].aws_call(service, operation, send) if _active else send()

    traced._chatguard_traced = True  # type: ignore[attr-defined]
    setattr(BaseClient, "_make_api_call", traced)  # noqa: B010 (typeshed has no setter)
