"""What one execution produced: the HTTP reply and the per-step records, read from the
engine's result the way API Gateway's integration response reads StartSyncExecution."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from steps.lib.request.reply import project
from steps.lib.runtime.stages import STAGES

from .step_functions import Finished
from .tracing import StepRecord

FAIL_CLOSED = {"error": "The chat is unavailable right now. Please try again later."}


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int
    body: dict[str, Any]
    steps: tuple[StepRecord, ...]
    request_id: str = ""
    ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "body": self.body,
            "steps": [s.as_dict() for s in self.steps],
        }


@dataclass(frozen=True, slots=True)
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    deadline: float

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


def http_reply(finished: Finished) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body API Gateway's integration response would produce.

    StartSyncExecution answers 200 even when the execution failed, so the status comes
    from the output; anything unexpected is a fail-closed 503, never a 500. The body passes
    the response template's rule (steps/lib/request/reply.py): only the contract's fields
    reach the client, as on AWS.
    """
    output = finished.output
    if finished.status != "SUCCEEDED" or not isinstance(output, dict):
        return 503, dict(FAIL_CLOSED)
    status, body = output.get("statusCode"), output.get("body")
    if not isinstance(status, int) or not isinstance(body, dict):
        return 503, dict(FAIL_CLOSED)
    return status, project(body)


_PATH_DECISIONS = {"Retrieve": "retrieved", "Invoke": "answered", "Degraded": "degraded"}


def decision_of(state: str, result: Any) -> str:
    """A step's decision, read from what it returned (the ASL's Choice states read the same)."""
    if isinstance(result, dict):
        for key in ("decision", "status"):
            if isinstance(result.get(key), str):
                return str(result[key])
    return _PATH_DECISIONS.get(state, "ok")


_TASKS = frozenset(stage.state for stage in STAGES)


def terminal(finished: Finished, status: int) -> tuple[StepRecord, ...]:
    """The state that shaped the reply when it is not a Task (FailClosed, Answer, ...)."""
    if finished.states and finished.states[-1] not in _TASKS:
        return (StepRecord(finished.states[-1], str(status), 0.0),)
    return ()
