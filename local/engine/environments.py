"""Lambda's execution environments, as a model: which invocation meets a cold one.

An offline stand-in for what Lambda does, not Lambda. The rules it models, from AWS's
words:

- An environment runs one request at a time: while it initialises and while it runs an
  invocation it "is busy and cannot process other requests", and "for each concurrent
  request, Lambda provisions a separate instance of your execution environment" (Lambda
  guide, "Understanding Lambda function scaling",
  https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html). So a call that
  comes while the only environment is still in a wake's INIT gets a new one, and pays its
  INIT.
- A new environment runs INIT before its first invocation (Lambda guide, "Understanding
  the Lambda execution environment lifecycle",
  https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html).
- An asynchronous invoke (``InvocationType: Event``) is queued and answered at once; the
  event reaches the function later (Lambda guide, "Invoking a Lambda function
  asynchronously", https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html).
  The delay is not documented: `delivery_delay` is the model's assumption
  (infra/cold_model.py, WAKE_DELIVERY_S).

Only functions given a cold start (`cold_start`) are modelled; every other function has a
warm environment free at every call, as the engine always had. Time is read from
``time.time()`` at each use, the clock tests pin: a synchronous call's INIT is spent on the
caller's path through its ``pause`` (a test's pause moves its pinned clock); an
asynchronous invocation's INIT is not on anyone's path, so its environment is only marked
busy until the moment it would be ready.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["call", "event"]  # synchronous, on the message's path; or asynchronous


@dataclass
class Environment:
    state: str
    busy_until: float  # free for a call from this time on (the end of its INIT or its work)
    running: bool = False  # a synchronous invocation is inside it right now


@dataclass(frozen=True, slots=True)
class Served:
    """One invocation: which function, how it was invoked, and whether its environment was
    new (a REPORT line with an Init Duration, on Lambda)."""

    state: str
    kind: Kind
    cold: bool
    environment: int  # the environment's number for this function, from 1


@dataclass
class _Function:
    init_seconds: float
    pause: Callable[[float], None]
    environments: list[Environment] = field(default_factory=list)


class Environments:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._functions: dict[str, _Function] = {}
        self.delivery_delay = 0.0
        self.served: list[Served] = []

    def cold_start(self, state: str, seconds: float, pause: Callable[[float], None]) -> None:
        """``state``'s function has no environment; each new one spends ``seconds`` in INIT
        (through ``pause`` when a synchronous call waits for it)."""
        with self._lock:
            self._functions[state] = _Function(seconds, pause)

    def call(self, state: str) -> Environment | None:
        """A synchronous invocation's environment: a free one, else a new one whose INIT
        the caller waits for. None for a function that is not modelled (always warm)."""
        with self._lock:
            function = self._functions.get(state)
            if function is None:
                return None
            now = time.time()
            free = [e for e in function.environments if not e.running and e.busy_until <= now]
            cold = not free
            environment = free[0] if free else Environment(state, now, running=True)
            environment.running = True
            if cold:
                function.environments.append(environment)
            self._record(function, state, "call", cold, environment)
        if cold:
            function.pause(function.init_seconds)
        return environment

    def done(self, environment: Environment | None) -> None:
        if environment is not None:
            with self._lock:
                environment.running = False
                environment.busy_until = min(environment.busy_until, time.time())

    def event(self, state: str) -> None:
        """An asynchronous invocation: delivered `delivery_delay` from now to a free
        environment, or to a new one that is then busy with its INIT until it is ready."""
        with self._lock:
            function = self._functions.get(state)
            if function is None:
                return
            arrives = time.time() + self.delivery_delay
            free = [e for e in function.environments if not e.running and e.busy_until <= arrives]
            if free:
                # Its few milliseconds of work are not modelled: a call coming first would
                # take the environment and the wake would find another (off every path).
                environment, cold = free[0], False
            else:
                environment, cold = Environment(state, arrives + function.init_seconds), True
                function.environments.append(environment)
            self._record(function, state, "event", cold, environment)

    def _record(
        self, function: _Function, state: str, kind: Kind, cold: bool, environment: Environment
    ) -> None:
        number = function.environments.index(environment) + 1
        self.served.append(Served(state, kind, cold, number))
