"""The cold-path model: how long each step's cold start takes on Lambda, from measured CPU.

``make bench-cold`` measures, per step and in a fresh interpreter that sees only what the
bundle ships, the CPU seconds of importing the handler (Lambda's INIT phase) and of its
first invocation, from source and with bytecode, and writes them to ``cold_model.json``
beside this file. The model turns them into seconds on Lambda:

    INIT (s)      = START + import CPU / share(memory)
    cold step (s) = INIT + first-invocation CPU / share(memory) + AWS calls x RTT
    share(MB)     = min(MB / 1769, 1)

Documented by AWS: the CPU share (one vCPU at 1,769 MB, [Lambda memory]) and INIT's own
10-second limit outside the function timeout ([execution environment]). Assumed (no AWS
page gives them; docs/benchmarks.md lists each with what ``chatguard doctor`` measures in
its place): START, RTT, TRANSITION, and that this machine's CPU seconds stand for
Graviton's. The timeout proofs (tests/infra/test_timeout_order.py, and every chain of the
workflow in infra/worst_chains.py, which synthesis checks), the run budget's check and the
local engine's cold-start test read their figures from here, so a change that makes a
step slower to start shows up in all of them after the next ``make bench-cold``.

[Lambda memory]: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
[execution environment]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

MODEL_FILE = Path(__file__).with_name("cold_model.json")

Mode = Literal["source", "bytecode"]

VCPU_MB = 1769
INIT_LIMIT_S = 10.0  # AWS: INIT beyond this is retried within the invocation's timeout
# Assumed (docs/benchmarks.md, "Cold path"): sandbox + runtime start per cold step, one AWS
# call's round trip inside a Region, one Express state transition with its Lambda invoke.
START_S = 0.15
RTT_S = 0.010
TRANSITION_S = 0.020
# AWS calls each step makes on a cold first message, Bedrock excluded (bench-pipeline).
COLD_CALLS: Mapping[str, int] = {
    "OriginVerify": 1, "Quota": 2, "CostGate": 1, "Retrieve": 0, "Invoke": 1,
    "Reconcile": 1, "Degraded": 0,
}  # fmt: skip
ANSWERED = ("OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile")


def share(memory_mb: int) -> float:
    return min(memory_mb / VCPU_MB, 1.0)


@cache
def measured() -> dict[str, Any]:
    """The figures ``make bench-cold`` last wrote (committed with the code they measured)."""
    data: dict[str, Any] = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    return data


def cpu(state: str, mode: Mode) -> Mapping[str, float]:
    figures: Mapping[str, float] = measured()["cpu"][state][mode]
    return figures


def init_of(figures: Mapping[str, float], memory_mb: int) -> float:
    """A step's INIT phase on Lambda (its REPORT line's Init Duration), from its CPU."""
    return START_S + figures["import"] / share(memory_mb)


def cold_step_of(figures: Mapping[str, float], state: str, memory_mb: int) -> float:
    """INIT, then the first invocation with its AWS calls (Bedrock's own time excluded)."""
    first = figures["first"] / share(memory_mb)
    return init_of(figures, memory_mb) + first + COLD_CALLS[state] * RTT_S


def states_entered(until: str) -> int:
    """States the answered path of chat.asl.json enters from the start up to ``until``
    (Tasks and Choices alike; a Choice's first branch is the path forward)."""
    from statemachine import loader

    definition = json.loads(loader.definition_text())
    name, count = definition["StartAt"], 0
    while name:
        count += 1
        if name == until:
            return count
        state = definition["States"][name]
        name = state["Choices"][0]["Next"] if state["Type"] == "Choice" else state.get("Next")
    raise ValueError(f"{until} is not on the answered path")


# Steps whose INIT must add the local embedding model's load: S4 embeds queries with it
# when the deployment does (counted always: an upper bound for Titan deployments). S7 ranks
# its degraded answer with it in every deployment, and `make bench-cold` probes S7 as
# shipped, the model loaded at INIT: its measured import already holds the load.
MODEL_AT_INIT = ("Retrieve",)


def init_seconds(state: str, mode: Mode, memory_mb: int, *, with_model: bool = False) -> float:
    """A step's INIT; ``with_model`` adds the local model's load (``make bench-cold``
    measures it in a fresh process, imports and checksums included) when the step runs it."""
    load = float(measured()["local_model_load_cpu"]) if with_model else 0.0
    return init_of(cpu(state, mode), memory_mb) + load / share(memory_mb)


def worst_init_seconds(state: str, memory_mb: int) -> float:
    """The INIT a chain counts for ``state`` when cold: from source (the slowest bundle
    synthesis ships), with the local model where the step loads it."""
    return init_seconds(state, "source", memory_mb, with_model=state in MODEL_AT_INIT)


def cold_step(state: str, mode: Mode, memory_mb: int) -> float:
    return cold_step_of(cpu(state, mode), state, memory_mb)


def cold_until(state: str, mode: Mode, memory: Mapping[str, int]) -> float:
    """From the execution's start to the end of ``state``'s first invocation, every step on
    the way cold: the latest a cold message reaches anything ``state`` does."""
    path = ANSWERED[: ANSWERED.index(state) + 1]
    steps = sum(cold_step(s, mode, memory[s]) for s in path)
    return steps + states_entered(state) * TRANSITION_S


# The wake (statemachine/chat.asl.json, WakeLaterSteps): when S1 finds the site quiet, S4-S6
# are invoked asynchronously right after it, so their INIT can run while S2 and S3 do.
WOKEN = ("Retrieve", "Invoke", "Reconcile")
# Assumed: from the asynchronous Invoke's answer to the event reaching the function (Lambda
# queues it first; no AWS page gives the delay). doctor --cold measures it in its place.
WAKE_DELIVERY_S = 0.2


Figures = Mapping[str, Mapping[str, float]]  # per step: import, first (and warm) CPU


def wake_timeline_of(
    cpu_by_state: Figures, memory: Mapping[str, int], delivery_s: float = WAKE_DELIVERY_S
) -> dict[str, dict[str, float | bool]]:
    """Per answered step of a quiet first message with the wake: when the real call arrives
    (from the execution's start), whether the woken environment is ready by then (the wake
    sent at its state, + ``delivery_s`` + START + INIT), how much later the delivery could
    come before it misses (``margin``, negative when it does) and the step's time. S1-S3 are
    cold; a woken step is warm when ready (its first invocation without the INIT), else cold:
    Lambda gives the real call another environment."""
    timeline: dict[str, dict[str, float | bool]] = {}
    sent = cold_step_of(cpu_by_state["OriginVerify"], "OriginVerify", memory["OriginVerify"])
    sent += states_entered("WakeLaterSteps") * TRANSITION_S
    elapsed = 0.0
    for state in ANSWERED:
        figures, mb = cpu_by_state[state], memory[state]
        arrives = elapsed + states_entered(state) * TRANSITION_S
        row: dict[str, float | bool] = {"arrives": arrives}
        step = cold_step_of(figures, state, mb)
        if state in WOKEN:
            init = init_of(figures, mb)
            ready = sent + delivery_s + init
            row.update(init=init, margin=arrives - ready, warm=ready <= arrives)
            if ready <= arrives:
                step -= init
        row["step"] = step
        timeline[state] = row
        elapsed += step
    return timeline


def cold_message_of(cpu_by_state: Figures, memory: Mapping[str, int]) -> float:
    """A first message with every step cold, from the execution's start to its answer
    (Bedrock excluded): the wake lost, or was not sent."""
    steps = sum(cold_step_of(cpu_by_state[s], s, memory[s]) for s in ANSWERED)
    return steps + states_entered("Answer") * TRANSITION_S


def woken_message_of(
    cpu_by_state: Figures, memory: Mapping[str, int], delivery_s: float = WAKE_DELIVERY_S
) -> float:
    """A quiet first message with the wake, from the execution's start to its answer."""
    last = wake_timeline_of(cpu_by_state, memory, delivery_s)["Reconcile"]
    to_answer = states_entered("Answer") - states_entered("Reconcile")
    return float(last["arrives"]) + float(last["step"]) + to_answer * TRANSITION_S


def message_seconds(mode: Mode, memory: Mapping[str, int], *, woken: bool) -> float:
    """A quiet first message on the committed figures: every step cold, or with the wake."""
    figures = {s: cpu(s, mode) for s in ANSWERED}
    return woken_message_of(figures, memory) if woken else cold_message_of(figures, memory)


# Assumed: Titan's query embedding in S4 (Bedrock's time, which the CPU figures leave out).
EMBEDDING_WAIT_S = 0.15
# State transitions and each Task's own Invoke round trip over a settlement (no AWS figure).
SETTLE_SLACK_S = 1.0


def memory() -> dict[str, int]:
    from steps.lib.runtime.stages import STAGES

    return {stage.state: stage.memory_mb for stage in STAGES}


def reach_invoke_seconds(mode: Mode = "source") -> float:
    """From the execution's start to the end of S5's first invocation's own work, with every
    step cold (Bedrock's answer excluded, S4's embedding included): the latest a cold first
    message reaches S5's billed calls. Source only is the slowest shipping configuration."""
    return cold_until("Invoke", mode, memory()) + EMBEDDING_WAIT_S


def settle_worst_seconds(mode: Mode = "source") -> float:
    """S6 after the last billed call, at its worst: throttled once (its retry's wait), then a
    cold start (INIT runs before the handler and outside the function timeout, [execution
    environment]) and the whole function timeout, plus the transitions."""
    from statemachine import loader
    from steps.lib.runtime.stages import BY_STATE

    stage = BY_STATE["Reconcile"]
    init = init_seconds("Reconcile", mode, stage.memory_mb)
    return loader.retry_waits("Reconcile") + init + stage.timeout_seconds + SETTLE_SLACK_S
