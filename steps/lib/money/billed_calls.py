"""The one check before every billed call, and whether anything has been sent yet.

A reservation pays for the calls of one message on one UTC day (the ledger charged the day
S2 saw). Every billed call (S4's embedding, S5's ApplyGuardrail, then Converse) goes out
through ``Sender.before`` right before it is sent, which refuses when

- the reservation's day has ended: the call would be billed on the next day while its
  reservation is recorded on the previous one; or
- the call's worst case (its client's timeouts, runtime/clients.py) would end after the
  run's budget: the execution's start plus ``withinSeconds`` (the ASL passes both, and
  tests/infra/test_timeout_order.py checks that the settlement after the budget still fits
  inside the workflow's timeout). A call that cannot finish in time would be billed while
  the run times out with a generic 503 and its reservation never settles.

The same object knows whether anything billable has been sent: until the first
``before`` passes, every failure of the step (a secret that cannot be read, a CountTokens
that breaks, the day or time check itself) is ``NotSent``, which the state machine answers
by releasing the reservation. Once a call may have gone out, a refusal or failure leaves
the reservation standing (over-counts, never under-counts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..request import identity
from ..runtime.errors import ModelError, NotSent


@dataclass(frozen=True, slots=True)
class Budget:
    """The run's time budget for billed calls: every one must end by ``deadline``."""

    started_at: float  # epoch seconds: the execution's start ($$.Execution.StartTime)
    within_seconds: float

    @property
    def deadline(self) -> float:
        return self.started_at + self.within_seconds

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None) -> Budget | None:
        """From the ASL's ``{"startedAt": ISO 8601, "withinSeconds": n}``; None when absent
        (a handler invoked outside the workflow has no run to fit in)."""
        if not raw:
            return None
        try:
            started = datetime.fromisoformat(str(raw["startedAt"]).replace("Z", "+00:00"))
            within = float(raw["withinSeconds"])
        except (KeyError, TypeError, ValueError) as exc:
            raise NotSent(f"the run's budget is malformed: {raw!r}") from exc
        if started.tzinfo is None or not within > 0:
            raise NotSent(f"the run's budget is malformed: {raw!r}")
        return cls(started.timestamp(), within)


@dataclass(slots=True)
class Sender:
    """One per invocation: the check before each billed call, and whether one was sent."""

    day: str  # the reservation's UTC day
    budget: Budget | None
    clock: Callable[[], float] = field(default=lambda: time.time())  # read at each call
    sent: bool = field(default=False, init=False)

    def before(self, call: str, *, needs_seconds: float) -> None:
        """Raise unless ``call`` may go out now and end within the budget; then it counts
        as sent (it may be billed even if it fails)."""
        now = self.clock()
        problem = ""
        if identity.day_ended(self.day, now):
            problem = f"the reservation is for {self.day}, which has ended"
        elif self.budget is not None and now + needs_seconds > self.budget.deadline:
            left = self.budget.deadline - now
            problem = f"{call} needs up to {needs_seconds:g} s, {left:.1f} s of the run are left"
        if problem and self.sent:
            raise ModelError(f"{problem}; {call} not sent (an earlier call was)")
        if problem:
            raise NotSent(f"{problem}; nothing was sent")
        self.sent = True

    def failure(self, exc: Exception) -> Exception:
        """What a step's failure becomes: NotSent while nothing was sent, else itself."""
        if self.sent or isinstance(exc, NotSent):
            return exc
        return NotSent(f"failed before anything was sent: {type(exc).__name__}: {exc}")
