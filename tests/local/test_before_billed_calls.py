"""The one check before every billed call, and "released iff nothing was sent", on the real
ASL (moto's engine, the real handlers).

Each billed call (the embedding, ApplyGuardrail, Converse) is preceded by the same check
(money/billed_calls.py): the reservation's UTC day is still today. Until the first billed
call goes out, every failure of S5 is NotSent and the reservation is released on its own
day; once one may have gone out, the reservation stands.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from local.engine.runtime import LocalRuntime
from steps import invoke
from steps.lib.money import pricing
from steps.lib.providers import models
from steps.lib.request import identity
from steps.lib.runtime import secrets
from steps.lib.runtime.errors import DependencyUnavailable
from tests.clock import at
from tests.fakes import CannotCount

from .conftest import QUESTION, VISITOR, day_total, reservations

LAST_SECOND = at("2026-12-31 23:59:59")
NEXT_DAY = at("2027-01-01 00:00:01")


@pytest.fixture
def guarded(make_runtime: Callable[..., LocalRuntime]) -> LocalRuntime:
    return make_runtime(guardrail_id="gr-test", guardrail_version="1")


def _states(outcome: Any) -> list[str]:
    return [step.state for step in outcome.steps]


def _released_on(runtime: LocalRuntime, day: str) -> None:
    [reservation] = reservations(runtime)
    assert reservation["day"]["S"] == day and reservation["status"]["S"] == "settled"
    assert day_total(runtime) == pricing.release_micros(runtime.settings)


class Recorder(CannotCount):
    """A responder recording the UTC day each billed call is sent on; ``late`` moves the
    clock past midnight at one point of S5 (``"start"``: once S5 has started, while it
    reads its signing key and fits the prompt, before any billed call; ``"guard"``: during
    the guardrail call)."""

    def __init__(self, clock: list[float], late: str) -> None:
        self.clock, self.late = clock, late
        self.sent: list[tuple[str, str]] = []

    def started(self) -> Recorder:
        if self.late == "start":
            self.clock[0] = NEXT_DAY
        return self

    def guard(self, text: str) -> Any:
        self.sent.append(("ApplyGuardrail", identity.day_of(self.clock[0])))
        if self.late == "guard":
            self.clock[0] = NEXT_DAY  # the guardrail took the last second of the year
        return super().guard(text)

    def converse(self, *, system: str, messages: list[Any]) -> Any:
        self.sent.append(("Converse", identity.day_of(self.clock[0])))
        return models.ModelReply("An answer.", {"inputTokens": 900, "outputTokens": 40}, "")


def _at_midnight(monkeypatch: pytest.MonkeyPatch, late: str) -> Recorder:
    clock = [LAST_SECOND]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    recorder = Recorder(clock, late)
    monkeypatch.setattr(models, "responder", lambda s: recorder.started())
    return recorder


def test_a_guardrail_is_not_sent_after_its_reservations_day(
    guarded: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reserved in the last second of the year; S5's signing-key read and counting run past
    # midnight. S5 used to check the day only while fitting the prompt, with the time it
    # read at its start: the guardrail went out on January's day under December's
    # reservation.
    recorder = _at_midnight(monkeypatch, late="start")
    outcome = guarded.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and recorder.sent == []
    assert _states(outcome)[-3:] == ["Invoke", "Reconcile", "FailClosed"]
    assert outcome.steps[-3].decision == "error: NotSent"
    _released_on(guarded, "2026-12-31")


def test_converse_as_the_first_billed_call_is_not_sent_after_the_day_and_releases(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _at_midnight(monkeypatch, late="start")  # no guardrail configured
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and recorder.sent == []
    assert outcome.steps[-3].decision == "error: NotSent"
    _released_on(runtime, "2026-12-31")


def test_converse_after_a_guardrail_that_crossed_midnight_is_not_sent_and_the_reservation_stands(
    guarded: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _at_midnight(monkeypatch, late="guard")
    outcome = guarded.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    assert recorder.sent == [("ApplyGuardrail", "2026-12-31")]  # billed on its own day
    assert _states(outcome)[-2:] == ["Invoke", "ModelFailed"]
    [reservation] = reservations(guarded)
    assert reservation["day"]["S"] == "2026-12-31" and reservation["status"]["S"] == "open"


def test_an_unreadable_signing_key_releases_the_reservation(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = secrets.get_secret

    def ssm_down(name: str, s: Any, **kwargs: Any) -> Any:
        if name == runtime.settings.signing_key_param:
            raise DependencyUnavailable("SSM GetParameter failed: ThrottlingException")
        return real(name, s, **kwargs)

    monkeypatch.setattr(secrets, "get_secret", ssm_down)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    assert _states(outcome)[-3:] == ["Invoke", "Reconcile", "FailClosed"]
    _released_on(runtime, "2026-11-29")


def test_a_count_tokens_that_breaks_releases_the_reservation(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    class BrokenCount(CannotCount):
        def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
            raise RuntimeError("an unexpected error in the CountTokens adapter")

        def converse(self, **kwargs: Any) -> Any:
            raise AssertionError("never sent")

    monkeypatch.setattr(models, "responder", lambda s: BrokenCount())
    # S5 prices input dearer than S3 did (a deploy in flight): the fullest prompt's byte
    # bound no longer fits its allowance, so S5 counts.
    dearer = runtime.settings.replace(price_input_per_mtok="4.00")
    monkeypatch.setattr(invoke, "settings", lambda: dearer)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    assert _states(outcome)[-3:] == ["Invoke", "Reconcile", "FailClosed"]
    _released_on(runtime, "2026-11-29")
