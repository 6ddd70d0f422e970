"""The first message after a quiet spell, on the real ASL: every step cold, one after another.

The engine spends each step's INIT before its handler (``cold_start``), as Lambda runs a new
execution environment's INIT before the first invocation and outside the function timeout
(Lambda guide, "Lambda execution environment"). The time is the cold-path model's
(infra/cold_model.py: INIT and first invocation from source, the slowest bundle synthesis
ships, at each step's memory, plus a state transition), spent on the test's pinned clock,
which is also the clock moto reads for ``$$.Execution.StartTime``: S5's run budget sees it.
A guardrail is configured, as in the deployed default, so S5 needs room for ApplyGuardrail
and Converse at their clients' worst before it sends anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from infra import cold_model
from local.engine.runtime import LocalRuntime
from steps.lib.money import pricing
from tests.clock import at

from .conftest import ANSWERED_PATH, QUESTION, VISITOR, day_total, number, reservations

NOON = at("2026-11-29 12:00:00")
# The model's cold step per state from source before issue 29's levers (docs/benchmarks.md,
# Cold path, as measured on 2026-12-02: every step compiling its own botocore, Powertools
# and the X-Ray SDK; S5 at 1,024 MB): a 9.35 s cold message.
BEFORE_THE_LEVERS = {"OriginVerify": 1.21, "Quota": 1.42, "CostGate": 1.32, "Retrieve": 1.79,
                     "Invoke": 2.17, "Reconcile": 1.25}  # fmt: skip


WAKE_LOST = 60.0  # seconds for the wake's event to arrive: after the whole message


def _modelled() -> dict[str, float]:
    memory = cold_model.memory()
    return {s: cold_model.cold_step(s, "source", memory[s]) for s in cold_model.ANSWERED}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [NOON]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def _cold(runtime: LocalRuntime, clock: list[float], steps: Mapping[str, float]) -> None:
    """Every step cold, and the wake of S4-S6 (a runtime's first message is quiet) lost:
    its event comes too late, so each real call starts an environment of its own. The
    budget keeps this worst case; tests/local/test_wake.py has the wake winning."""

    def pause(seconds: float) -> None:
        clock[0] += seconds

    for state, seconds in steps.items():
        runtime.cold_start(state, seconds + cold_model.TRANSITION_S, pause)
    runtime.wake_delivery(WAKE_LOST)


def _old_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ASL's run budget before issue 29 (21 s) and its 2 s Converse connect timeout."""
    from statemachine import loader

    text = loader.definition_text().replace('"withinSeconds": 20', '"withinSeconds": 21')
    monkeypatch.setattr(loader, "definition_text", lambda: text)
    assert loader.run_budget_seconds() == 21


@pytest.fixture
def guarded(make_runtime: Callable[..., LocalRuntime]) -> Callable[..., LocalRuntime]:
    def make(**overrides: Any) -> LocalRuntime:
        return make_runtime(guardrail_id="gr-test", guardrail_version="1", **overrides)

    return make


def test_a_cold_first_message_is_answered_and_settled(clock, guarded):
    runtime = guarded()
    _cold(runtime, clock, _modelled())
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 200 and runtime.model_calls == 1
    assert [step.state for step in outcome.steps] == ANSWERED_PATH
    assert all(step.decision != "error: NotSent" for step in outcome.steps)
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"
    assert 0 < day_total(runtime) < number(reservation, "reservedMicros")
    # Every injected INIT was spent: the clock moved by the whole modelled cold path.
    spent = sum(_modelled().values()) + len(cold_model.ANSWERED) * cold_model.TRANSITION_S
    assert clock[0] - NOON == pytest.approx(spent)


def test_the_cold_start_is_spent_once_per_environment(clock, guarded):
    runtime = guarded()
    _cold(runtime, clock, _modelled())
    runtime.send(QUESTION, ip=VISITOR)
    after_first = clock[0]
    assert runtime.send(QUESTION, ip="192.0.2.2").status == 200
    assert clock[0] == after_first  # warm: no INIT the second time


def test_before_the_levers_the_old_budget_refused_the_cold_message_and_released_it(
    clock, guarded, monkeypatch
):
    # The naive variant on the same harness: the cold path the model measured before the
    # levers, under the budget of the time. S5 starts ~8.1 s into the run; the guardrail
    # (3 s) and Converse (2 + 10 s) no longer fit 21 s, so nothing is sent: a 503.
    _old_budget(monkeypatch)
    runtime = guarded(bedrock_connect_timeout_seconds=2)
    _cold(runtime, clock, BEFORE_THE_LEVERS)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    invoke = next(step for step in outcome.steps if step.state == "Invoke")
    assert invoke.decision == "error: NotSent"
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"  # released: nothing billed
    assert day_total(runtime) == pricing.release_micros(runtime.settings)


def test_the_same_old_cold_path_is_refused_by_todays_budget_too(clock, guarded):
    # What fixed the cold message is the levers, not a longer budget: with today's 20 s and
    # 1 s connect timeout, S1-S5 still have the same 6 s before the guardrail.
    runtime = guarded()
    _cold(runtime, clock, BEFORE_THE_LEVERS)
    assert runtime.send(QUESTION, ip=VISITOR).status == 503 and runtime.model_calls == 0
