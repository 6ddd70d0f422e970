"""Every chain of states the workflow allows, from its start to an end, at its worst.

A chain is a path through the ASL's own transitions (``Next``, each ``Catch``'s ``Next``,
each Choice rule's ``Next`` and its ``Default``), so a state added later is on the chains
that reach it without editing this module or its tests. Each chain must end (an answer or
the contract's 503) inside the workflow's ``TimeoutSeconds``: a run cut there after S3
reserved and before ``ReleaseReservation`` leaves the reservation held until its TTL, and
the visitor gets the API's timeout instead of the 503.

What each state costs on a chain, at its worst:

- a Task running a Lambda: its throttle retries' waits (a throttled attempt never ran:
  ``Lambda.TooManyRequestsException`` is the only error the ASL retries), then its INIT
  when cold (Lambda runs INIT before the handler and outside the function timeout, up to
  10 s: [execution environment]; the INIT is ``infra/cold_model.py``'s, from source), then
  its whole Lambda timeout ([Lambda timeout]);
- a Task with ``TimeoutSeconds`` (the wake's asynchronous invokes): that bound, as Step
  Functions fails the state when it passes ([Task state]);
- a Parallel: its slowest branch ([Parallel state]); a Choice or Pass: nothing.

S5 (``Invoke``) is bounded by its code, not its (much longer) Lambda timeout: every billed call
it sends ends within the run budget (``withinSeconds`` from the execution's start,
money/billed_calls.py), and before the first one it waits only on the signing key's read
and on counting, each with a client timeout (runtime/clients.py, money/metering.py); any
failure there is ``NotSent``. So S5 ends by the later of the budget's end and its arrival
plus its throttle wait, INIT, key read and counting.

Transitions and each Invoke's own round trip are set aside in ``SLACK`` (no AWS figure).
A state type this module does not know, a Task with no bound or a loop is refused
(``Unbounded``): the proof never skips a state.

[execution environment]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
[Lambda timeout]: https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html
[Task state]: https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html
[Parallel state]: https://docs.aws.amazon.com/step-functions/latest/dg/state-parallel.html
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra import cold_model
from statemachine import loader
from steps.lib.money import metering
from steps.lib.runtime import clients
from steps.lib.runtime.stages import STAGES, Stage

# State transitions and each Invoke's own round trip, for the whole run: AWS publishes no
# latency for them (docs/benchmarks.md models 20 ms per state entered), so one second.
SLACK = 1.0
# Lambda throttled the invocation, so the function never ran (the one error retried).
THROTTLED = "Lambda.TooManyRequestsException"


class Unbounded(ValueError):
    """A state the proof cannot bound: a type it does not know or a Task with no timeout."""


@dataclass(frozen=True, slots=True)
class Function:
    """What a Task's Lambda costs a chain: the stage it runs, its timeout, its INIT."""

    state: str  # the stage (steps/lib/runtime/stages.py) whose handler it runs
    timeout: float  # its Lambda timeout
    init: float  # its INIT phase when cold; 0 for a warm chain


@dataclass(frozen=True, slots=True)
class Invoke:
    """S5's own bound (module docstring): the run budget and what precedes its first call."""

    within: float  # the run budget, seconds from the execution's start
    pre_send: float  # the signing key's read + counting, at their clients' worst


@dataclass(frozen=True, slots=True)
class Chain:
    states: tuple[str, ...]  # entered in order; the last one ends the run
    seconds: float  # from the execution's start, the slack included

    def __str__(self) -> str:
        return " > ".join(self.states)


Resolve = Callable[[Mapping[str, Any]], Function | None]  # a Task -> the Lambda it runs
_PLACEHOLDER = re.compile(r"^\$\{([A-Za-z0-9_]+)\}$")
_INVOKE_API = "arn:aws:states:::lambda:invoke"


def by_placeholder(functions: Mapping[str, Function]) -> Resolve:
    """Resolve a Task by the ``${...FunctionArn}`` it names (``Resource``, or the invoke API's
    ``FunctionName``): the ASL file and the synthesized template both carry them. An
    asynchronous invoke (``InvocationType: Event``) runs no function on the chain: Lambda
    answers once the event is queued, so only its ``TimeoutSeconds`` bounds it."""

    def resolve(task: Mapping[str, Any]) -> Function | None:
        ref = task.get("Resource", "")
        if ref == _INVOKE_API:
            parameters = task.get("Parameters", {})
            if parameters.get("InvocationType") == "Event":
                return None
            ref = parameters.get("FunctionName", "")
        found = _PLACEHOLDER.match(str(ref))
        return functions.get(found.group(1)) if found else None

    return resolve


def invoke_bound(within: float) -> Invoke:
    """S5's bound for a run budget of ``within`` s: the signing key's read (SSM's client),
    then counting (none started after its budget, each at CountTokens' client worst)."""
    pre_send = clients.SSM.worst + metering.COUNT_BUDGET_SECONDS + clients.COUNT.worst
    return Invoke(within=within, pre_send=pre_send)


def shipped(stages: Sequence[Stage] = STAGES, *, cold: bool = True) -> list[Chain]:
    """The chains of chat.asl.json with the stage table's timeouts (what synthesis deploys),
    every step cold (INIT from source, the local model where loaded) or every step warm."""

    def init(s: Stage) -> float:
        return cold_model.worst_init_seconds(s.state, s.memory_mb) if cold else 0.0

    functions = {s.placeholder: Function(s.state, s.timeout_seconds, init(s)) for s in stages}
    definition = json.loads(loader.definition_text())
    return chains(definition, by_placeholder(functions), invoke_bound(loader.run_budget_seconds()))


def chains(definition: Mapping[str, Any], resolve: Resolve, invoke: Invoke) -> list[Chain]:
    """Every chain from ``StartAt`` to an end, each at its worst, slowest first."""
    found = [
        Chain(names, seconds + SLACK)
        for names, seconds in _walk(definition["States"], definition["StartAt"], resolve, invoke)
    ]
    return sorted(found, key=lambda c: -c.seconds)


def _walk(
    states: Mapping[str, Any],
    name: str,
    resolve: Resolve,
    invoke: Invoke,
    at: float = 0.0,
    before: tuple[str, ...] = (),
) -> Iterator[tuple[tuple[str, ...], float]]:
    if name in before:
        raise Unbounded(f"{name}: a loop ({' > '.join(before)} > {name}) has no worst case")
    state = states[name]
    kind = state["Type"]
    if kind in ("Succeed", "Fail"):
        yield (name,), at
        return
    if kind == "Task":
        ends = _task_end(state, at, resolve, invoke)
    elif kind == "Parallel":
        slowest = max(_branch(b, resolve, invoke) for b in state["Branches"])
        ends = at + loader.state_retry_waits(state) + slowest
    elif kind in ("Choice", "Pass"):
        ends = at
    else:
        raise Unbounded(f"{name}: the timeout proof does not know {kind} states")
    if state.get("End"):
        yield (name,), ends
    for after in sorted(_successors(state)):
        for rest, seconds in _walk(states, after, resolve, invoke, ends, (*before, name)):
            yield (name, *rest), seconds


def _successors(state: Mapping[str, Any]) -> set[str]:
    found = {state["Next"]} if "Next" in state else set()
    found |= {c["Next"] for c in state.get("Catch", [])}
    found |= {rule["Next"] for rule in state.get("Choices", [])}
    if "Default" in state:
        found.add(state["Default"])
    return found


def _branch(branch: Mapping[str, Any], resolve: Resolve, invoke: Invoke) -> float:
    walked = _walk(branch["States"], branch["StartAt"], resolve, invoke)
    return max(seconds for _, seconds in walked)


def _task_end(state: Mapping[str, Any], at: float, resolve: Resolve, invoke: Invoke) -> float:
    function, waits = resolve(state), loader.state_retry_waits(state)
    if function is not None and function.state == "Invoke":
        return max(invoke.within, at + waits + function.init + invoke.pre_send)
    bounds = [float(state["TimeoutSeconds"])] if "TimeoutSeconds" in state else []
    if function is not None:
        bounds.append(function.init + function.timeout)
    if not bounds:
        raise Unbounded(f"a Task with no TimeoutSeconds and no known Lambda: {state!r}")
    return at + waits + _runs(state) * min(bounds)


def _runs(state: Mapping[str, Any]) -> int:
    """Attempts that may run to the bound: one, plus every retry of an error that ran."""
    ran = [r for r in state.get("Retry", []) if set(r["ErrorEquals"]) != {THROTTLED}]
    return 1 + sum(int(r.get("MaxAttempts", 3)) for r in ran)
