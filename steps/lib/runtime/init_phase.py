"""Work a step does once per container, moved to module scope: Lambda's INIT phase.

Lambda runs a handler module's top level before the first invocation, under INIT's own
10-second limit rather than the function timeout, so a cold invocation's clock starts
with the clients built, the telemetry backend ready and (S4, S7) the index in
memory. Off Lambda (tests, the local runtime) nothing runs here: those choose endpoints,
settings and the index after importing the handlers, and everything is built on first use
exactly as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .telemetry import SERVICE, on_lambda


def at_init(*work: Callable[[], object]) -> None:
    """On Lambda, run each piece of work now; never raise.

    Whatever fails here runs again on the first invocation, which then fails closed with
    its one log line naming the problem (an INIT crash would log no decision at all).
    """
    if not on_lambda():
        return
    for piece in work:
        try:
            piece()
        except Exception:
            logging.getLogger(SERVICE).debug("deferred to the first invocation", exc_info=True)
