"""Lambda throttling and slow dependencies on the real ASL (moto's engine): the reply and
the ledger in each case.

The engine throttles a Task's function before its handler runs, as Lambda does when the
account's concurrency is used up; a slow dependency moves the steps' clock by its whole
client timeout. One time budget per run: S5 sends a billed call only when it can end
within the run budget the ASL gives it (money/billed_calls.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from local.engine.runtime import LocalRuntime
from steps.lib.money import pricing
from steps.lib.providers import models
from steps.lib.runtime import clients, secrets
from steps.lib.runtime.errors import ModelError
from tests.clock import at
from tests.fakes import CannotCount

from .conftest import ANSWERED_PATH, QUESTION, VISITOR, day_total, number, reservations

NOON = at("2026-11-29 12:00:00")


def _states(outcome: Any) -> list[str]:
    return [step.state for step in outcome.steps]


@pytest.mark.parametrize("state", ["Quota", "CostGate", "Invoke"])
def test_a_throttled_step_is_retried_once_and_the_message_answered_once(
    runtime: LocalRuntime, state: str
) -> None:
    runtime.throttle(state)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 200 and runtime.model_calls == 1
    assert _states(outcome) == ANSWERED_PATH  # the throttled attempt never ran a handler
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"  # one reservation, settled once
    assert 0 < day_total(runtime) < number(reservation, "reservedMicros")


def _assert_released(runtime: LocalRuntime) -> None:
    """The run's one reservation was released: settled, the day holding only the release."""
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"
    assert day_total(runtime) == pricing.release_micros(runtime.settings)


def test_an_invoke_throttled_past_its_retry_sent_nothing_and_releases(
    runtime: LocalRuntime,
) -> None:
    runtime.throttle("Invoke", times=2)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    assert _states(outcome)[-3:] == ["Retrieve", "Reconcile", "FailClosed"]
    _assert_released(runtime)


def test_a_signing_key_read_that_takes_its_whole_timeout_leaves_no_time_and_sends_nothing(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SSM's client: 3 attempts of 1 s connect + 3 s read. After that the run budget cannot
    # cover Converse at its own timeouts, so S5 sends nothing and the reservation goes.
    clock = [NOON]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    real = secrets.get_secret

    def slow(name: str, s: Any, **kwargs: Any) -> Any:
        if name == runtime.settings.signing_key_param:
            clock[0] += 3 * (1 + 3)
        return real(name, s, **kwargs)

    monkeypatch.setattr(secrets, "get_secret", slow)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    assert outcome.steps[-3].state == "Invoke" and outcome.steps[-3].decision == "error: NotSent"
    _assert_released(runtime)


def test_an_embedding_that_could_not_end_within_the_budget_is_not_sent(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # S4 starts 19 s into the run (slow steps before it); Titan's client may take 3 s and
    # the run budget ends at 20 s: S4 sends nothing and the reservation is released.
    clock = [NOON]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    real = models.query_embedder
    embedded: list[str] = []

    class StartsLate:
        def __init__(self, s: Any) -> None:
            self.inner = real(s)
            self.id = self.inner.id
            clock[0] = NOON + 19

        def embed_query(self, text: str) -> Any:
            embedded.append(text)
            return self.inner.embed_query(text)

    monkeypatch.setattr(models, "query_embedder", StartsLate)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and embedded == [] and runtime.model_calls == 0
    assert _states(outcome)[-3:] == ["Retrieve", "Reconcile", "FailClosed"]
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"


def test_a_converse_call_that_takes_its_whole_timeout_leaves_the_reservation_standing(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [NOON]
    monkeypatch.setattr(time, "time", lambda: clock[0])

    class TimesOut(CannotCount):
        def converse(self, **kwargs: Any) -> Any:
            clock[0] += clients.converse_timeouts(runtime.settings).worst
            raise ModelError("Converse failed: ReadTimeoutError")

    monkeypatch.setattr(models, "responder", lambda s: TimesOut())
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    assert _states(outcome)[-2:] == ["Invoke", "ModelFailed"]
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "open"  # it may have been billed: it stands
    assert day_total(runtime) == number(reservation, "reservedMicros")
