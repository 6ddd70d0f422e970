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
- inject contention (``Contention``): each item of a TransactWriteItems meets a
  TransactionConflict or a throttle at a chosen rate, seeded, as DynamoDB does under load
  and the emulator never does; the transaction is then cancelled and writes nothing;
- count calls per service and operation, and hand them to the trace recorder.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class Contention:
    """Injected contention: each item of a TransactWriteItems fails with probability
    ``rate`` (or ``rates[prefix]`` for an item whose partition key starts with ``prefix``,
    the longest prefix wins), with a code drawn from ``codes``; a seeded source."""

    rate: float
    seed: int
    codes: tuple[str, ...] = ("TransactionConflict", "ThrottlingError")
    rates: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not all(0 <= r <= 1 for r in (self.rate, *self.rates.values())):
            raise ValueError("contention rates are probabilities in [0, 1]")
        if not self.codes:
            raise ValueError("contention needs at least one code")

    def rate_for(self, pk: str) -> float:
        matches = [p for p in self.rates if pk.startswith(p)]
        return self.rates[max(matches, key=len)] if matches else self.rate


class _Contender:
    def __init__(self, contention: Contention) -> None:
        self.contention = contention
        self._rng = random.Random(contention.seed)
        self._lock = threading.Lock()
        self.injected: Counter[str] = Counter()

    def reasons(self, request: Any) -> list[dict[str, str]] | None:
        """Cancellation reasons for this transaction, or None to let it run."""
        body = request.body
        items = json.loads(body.decode() if isinstance(body, bytes) else body)["TransactItems"]
        reasons = []
        with self._lock:
            for entry in items:
                op = next(iter(entry.values()))
                pk = (op.get("Key") or op.get("Item") or {}).get("pk", {}).get("S", "")
                code = "None"
                if self._rng.random() < self.contention.rate_for(pk):
                    code = self._rng.choice(self.contention.codes)
                    self.injected[code] += 1
                reasons.append({"Code": code})
        return reasons if any(r["Code"] != "None" for r in reasons) else None


def _cancelled(reasons: list[dict[str, str]]) -> Response:
    kind = "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
    codes = ", ".join(r["Code"] for r in reasons)
    message = f"Transaction cancelled, please refer cancellation reasons [{codes}]"
    body = json.dumps({"__type": kind, "CancellationReasons": reasons, "Message": message})
    headers = {"x-amzn-errortype": kind, "content-type": "application/x-amz-json-1.0"}
    return 400, headers, body.encode()


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
        self._contender: _Contender | None = None

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

    def contend(self, contention: Contention | None) -> None:
        """Inject contention into every following transaction (None: stop)."""
        self._contender = _Contender(contention) if contention is not None else None

    def injected(self) -> Counter[str]:
        """How many items met each injected code so far."""
        contender = self._contender
        return Counter(contender.injected) if contender is not None else Counter()

    def count(self, service: str, operation: str) -> None:
        """One call that reached an emulated service without a botocore request (the
        engine's in-process Lambda Invoke)."""
        with self._count_lock:
            self._counts[service, operation] += 1

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
            contender = self._contender
            if contender is not None and (service, operation) == ("dynamodb", "TransactWriteItems"):
                reasons = contender.reasons(request)
                if reasons is not None:
                    return _cancelled(reasons)
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
