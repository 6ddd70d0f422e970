"""Whether the site looks quiet to S1: the signal for waking the later steps.

Lambda keeps an idle execution environment "for a non-deterministic period of time"
(Lambda operator guide, "Lambda execution environments",
https://docs.aws.amazon.com/lambda/latest/operatorguide/execution-environments.html) and
gives no figure, so the threshold is ours. S1 calls the site quiet when its own
environment is new (its first verified request) or its previous verified request came
more than `QUIET_AFTER_SECONDS` ago. Only verified requests count, both as the trigger
(a request S1 refused never wakes anything) and as activity (refused requests never reach
S4-S6, so they keep nothing of theirs warm).

The threshold leans short because the two mistakes cost very different amounts: a wake of
environments that were still warm costs three millisecond invocations; a wake not sent
costs the visitor the later steps' INITs. Under a flood S1 is warm, so nothing is woken;
when Lambda adds S1 environments to carry a flood, each new one wakes once (three
invocations per new S1 environment, which at that moment also start environments the
flood is about to need).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

QUIET_AFTER_SECONDS = 5 * 60


class LastSeen:
    """The time of this environment's last verified request (one per environment)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        # Read at each call (not bound at import): tests pin ``time.time``.
        self._clock = clock or (lambda: time.time())
        self._last: float | None = None
        self._lock = threading.Lock()  # the local runtime shares one S1 among threads

    def quiet_then_seen(self, quiet_after: float = QUIET_AFTER_SECONDS) -> bool:
        """Whether the site was quiet before this request; then records the request."""
        now = self._clock()
        with self._lock:
            last, self._last = self._last, now
        return last is None or now - last > quiet_after

    def forget(self) -> None:
        """A new environment (the local runtime starts each run as a fresh deployment)."""
        with self._lock:
            self._last = None


# S1's environment: module state lives exactly as long as a Lambda execution environment.
ENVIRONMENT = LastSeen()
