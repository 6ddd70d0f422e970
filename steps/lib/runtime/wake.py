"""The wake: S1 starts the later steps' execution environments while the gate runs.

After a quiet spell every step of a message is cold, and their INITs add up one after
another. When S1 reports the site quiet (steps/lib/runtime/quiet.py), the state machine
invokes S4, S5 and S6 asynchronously (``InvocationType: Event``: Step Functions does not
wait for them; Step Functions guide, "Invoke an AWS Lambda function with Step Functions",
https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html) with this exact
payload, so Lambda runs their INIT while S2 and S3 run. If an environment is still busy
with the wake when the real call comes, Lambda starts another one for the real call ("For
each concurrent request, Lambda provisions a separate instance of your execution
environment", Lambda guide, "Understanding Lambda function scaling",
https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html): that call is cold,
no worse than without the wake, and one more INIT is billed.

A step answers the wake at once, before its instrumentation: no ledger write, no model or
embedding call, no log line or metric a dashboard would count as a message. Only the exact
payload is a wake; anything else goes to the handler as before (a payload that merely
resembles it fails there as any malformed input does).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# The one payload the state machine sends (statemachine/chat.asl.json, WakeLaterSteps;
# tests/infra check the two are equal). No field of a real event is named "wake".
WAKE_PAYLOAD: dict[str, str] = {"wake": "chatguard: start this environment"}
WOKEN: dict[str, bool] = {"woken": True}


def is_wake(event: object) -> bool:
    """True for the exact wake payload only: same keys, same string value."""
    return (
        type(event) is dict
        and event.keys() == WAKE_PAYLOAD.keys()
        and type(event["wake"]) is str
        and event["wake"] == WAKE_PAYLOAD["wake"]
    )


def answers_wake(handler: F) -> F:
    """Answer the wake payload with `WOKEN` before ``handler`` (and its logging) runs: the
    INIT it started is all the wake is for."""

    @functools.wraps(handler)
    def run(event: Any, context: Any = None) -> Any:
        if is_wake(event):
            return dict(WOKEN)
        return handler(event, context)

    return run  # type: ignore[return-value]
