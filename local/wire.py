"""The wire seam: every emulated AWS call of the local runtime passes through here.

moto answers boto calls from a botocore ``before-send`` hook (its ``BotocoreStubber``).
Wrapping that stubber's ``process_request`` on its instance gives one place to:

- make each DynamoDB and SSM call atomic, as the real services are: one lock around the
  whole emulated call (moto's transaction checks conditions, then writes; without the lock
  two threads could interleave between the two). Step Functions and Lambda calls are NOT
  locked, so concurrent executions still interleave between steps and a check-then-add
  race stays real;
- inject faults (throttling, 5xx, timeouts, malformed bodies) for the fault tests and the
  demo, and stand in for the Bedrock endpoint, which moto does not emulate;
- count calls per service and operation, and hand them to the trace recorder.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from .tracing import recorder

ATOMIC_SERVICES = frozenset({"dynamodb", "ssm"})
Response = tuple[int, dict[str, str], bytes]
Responder = Callable[[Any], Response]


@dataclass(frozen=True, slots=True)
class Fault:
    service: str
    operations: frozenset[str] | None  # None: every operation of the service
    respond: Responder
    when: Callable[[], bool] | None = None  # e.g. "only inside the Reconcile step"

    def matches(self, service: str, operation: str) -> bool:
        return (
            self.service == service
            and (self.operations is None or operation in self.operations)
            and (self.when is None or self.when())
        )


def error_response(status: int, code: str, message: str = "injected fault") -> Responder:
    """An AWS JSON-protocol error (DynamoDB, SSM and Bedrock Runtime all use this shape)."""
    body = json.dumps({"__type": code, "message": message}).encode()
    headers = {"x-amzn-errortype": code, "content-type": "application/x-amz-json-1.0"}
    return lambda _request: (status, headers, body)


def json_response(payload: object, status: int = 200) -> Responder:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return lambda _request: (status, {"content-type": "application/json"}, body)


def timeout_response() -> Responder:
    def respond(request: Any) -> Response:
        raise ReadTimeoutError(endpoint_url=request.url)

    return respond


def classify(request: Any) -> tuple[str, str]:
    """(service, operation) of a botocore request, from its host and target or path."""
    parsed = urlparse(request.url)
    service = (parsed.hostname or "").split(".", 1)[0]
    target = request.headers.get("X-Amz-Target")
    if target:
        if isinstance(target, bytes):
            target = target.decode()
        return service, target.rsplit(".", 1)[-1]
    last = parsed.path.rstrip("/").rsplit("/", 1)[-1]
    operation = {
        "converse": "Converse",
        "count-tokens": "CountTokens",
        "invoke": "InvokeModel",
        "invocations": "Invoke",
    }
    return service, operation.get(last, last or "?")


class Wire:
    def __init__(self, real_services: frozenset[str] = frozenset()) -> None:
        # Services allowed to reach real AWS (`--model bedrock`: "bedrock-runtime"); every
        # other call moto does not emulate fails as an unreachable endpoint.
        self.real_services = real_services
        self._atomic = threading.RLock()
        self._faults: list[Fault] = []
        self._counts: Counter[tuple[str, str]] = Counter()
        self._count_lock = threading.Lock()
        self._stubber: Any = None

    def install(self) -> None:
        from moto.core.models import botocore_stubber

        self._stubber = botocore_stubber
        original = botocore_stubber.process_request  # bound to the stubber instance
        botocore_stubber.process_request = lambda request: self._process(original, request)

    def uninstall(self) -> None:
        if self._stubber is not None and "process_request" in vars(self._stubber):
            del self._stubber.process_request
        self._stubber = None

    @contextmanager
    def fault(
        self,
        service: str,
        respond: Responder,
        operations: Iterable[str] | None = None,
        *,
        in_step: str | None = None,
    ) -> Iterator[Fault]:
        """Answer matching calls with `respond` instead of the emulator while inside.

        `in_step` limits the fault to calls made by one state's handler (traced steps).
        """
        when = (lambda: recorder().current_state() == in_step) if in_step else None
        fault = Fault(service, frozenset(operations) if operations else None, respond, when)
        self._faults.append(fault)
        try:
            yield fault
        finally:
            self._faults.remove(fault)

    def counts(self) -> Counter[tuple[str, str]]:
        with self._count_lock:
            return Counter(self._counts)

    def reset_counts(self) -> None:
        with self._count_lock:
            self._counts.clear()

    def _process(self, original: Callable[[Any], Any], request: Any) -> Any:
        service, operation = classify(request)
        started = time.perf_counter()
        with self._count_lock:
            self._counts[service, operation] += 1
        try:
            fault = next((f for f in reversed(self._faults) if f.matches(service, operation)), None)
            if fault is not None:
                return fault.respond(request)
            try:
                if service in ATOMIC_SERVICES:
                    with self._atomic:
                        answer = original(request)
                else:
                    answer = original(request)
            except NotImplementedError:
                answer = None  # moto knows the service but not this operation (CountTokens)
            if answer is None and service in self.real_services:
                return None  # botocore sends it to AWS (the user's own Bedrock access)
            if answer is None:
                # moto does not emulate it (Bedrock Runtime): fail like an unreachable
                # endpoint rather than let a local run reach the real network.
                raise EndpointConnectionError(endpoint_url=request.url)
            return answer
        finally:
            if service not in ("lambda", "states"):
                recorder().note_call(service, operation, (time.perf_counter() - started) * 1000)
