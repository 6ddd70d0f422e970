"""Where a reservation is released and where it stands, on the real ASL.

Before the model call (S4 failing, or S5 refusing because what it would send does not fit
its reservation) nothing billable beyond the query embedding can have happened: the
reservation settles at the embedding's bound, once. From the model call on it stands.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from local.engine.runtime import LocalRuntime
from steps import invoke
from steps.lib.money import pricing
from steps.lib.money.byte_bound import text_bound
from steps.lib.providers import models
from steps.lib.runtime.errors import EmbeddingError
from tests.clock import at
from tests.fakes import CannotCount

from .conftest import QUESTION, VISITOR, day_total, reservations


def _states(outcome: Any) -> list[str]:
    return [step.state for step in outcome.steps]


def _released_once(runtime: LocalRuntime) -> None:
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"
    assert day_total(runtime) == pricing.release_micros(runtime.settings)


def test_a_titan_failure_releases_the_reservation(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = models.query_embedder

    class Throttled:
        def __init__(self, s: Any) -> None:
            self.id = real(s).id

        def embed_query(self, text: str) -> tuple[np.ndarray, int]:
            raise EmbeddingError("Titan embedding failed: ThrottlingException")

    monkeypatch.setattr(models, "query_embedder", Throttled)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    assert _states(outcome)[-3:] == ["Retrieve", "Reconcile", "FailClosed"]
    _released_once(runtime)


def test_invoke_refuses_a_reservation_too_small_for_what_it_holds_and_releases_it(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A deploy in flight: S3 still prices input at $1/MTok, S5 already at $10/MTok. S5
    # re-derives what the reservation pays for from its own prices: not even the system
    # prompt and the message fit, so it sends nothing.
    dearer = runtime.settings.replace(price_input_per_mtok="10.00")
    monkeypatch.setattr(invoke, "settings", lambda: dearer)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    assert _states(outcome)[-3:] == ["Invoke", "Reconcile", "FailClosed"]
    assert outcome.steps[-3].decision == "error: NotSent"
    _released_once(runtime)


def test_a_smaller_allowance_trims_the_prompt_instead_of_overspending(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    real = models.responder

    class Measuring(CannotCount):
        def __init__(self, s: Any) -> None:
            self.inner = real(s)

        def converse(self, **kwargs: Any) -> Any:
            from steps.lib.money.byte_bound import prompt_bound

            sent.append(prompt_bound(kwargs["system"], kwargs["messages"]))
            return self.inner.converse(**kwargs)

    monkeypatch.setattr(models, "responder", Measuring)
    full = runtime.send(QUESTION, ip=VISITOR)
    dearer = runtime.settings.replace(price_input_per_mtok="4.00")
    monkeypatch.setattr(invoke, "settings", lambda: dearer)
    trimmed = runtime.send(QUESTION, ip="198.51.100.41")
    assert full.status == trimmed.status == 200
    [reservation, *_] = reservations(runtime)
    allowance = pricing.input_allowance(
        dearer, int(reservation["reservedMicros"]["N"]), guarded_text=QUESTION["message"]
    )
    assert sent[1] <= allowance < sent[0]


def test_a_model_call_that_may_have_been_sent_leaves_the_reservation_standing(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steps.lib.runtime.errors import ModelError

    class TimedOut(CannotCount):
        def __init__(self, s: Any) -> None:
            pass

        def converse(self, **kwargs: Any) -> Any:
            raise ModelError("Converse failed: ReadTimeoutError")

    monkeypatch.setattr(models, "responder", TimedOut)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503
    assert _states(outcome)[-2:] == ["Invoke", "ModelFailed"]
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "open"
    assert day_total(runtime) == int(reservation["reservedMicros"]["N"])


def test_the_query_sent_to_titan_is_cut_to_its_byte_bound(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 emoji in the previous turn plus a dense message: 16,000 bytes of query.
    seen: list[str] = []
    real = models.query_embedder

    class Recording:
        def __init__(self, s: Any) -> None:
            self.inner = real(s)
            self.id = self.inner.id

        def embed_query(self, text: str) -> tuple[np.ndarray, int]:
            seen.append(text)
            return self.inner.embed_query(text)

    monkeypatch.setattr(models, "query_embedder", Recording)
    history = [{"role": "user", "content": "a" + "\U0001f600" * 1999}]
    outcome = runtime.send({"message": "\u6f22" * 1300, "history": history}, ip=VISITOR)
    assert outcome.status == 200
    assert text_bound(seen[0]) <= pricing.TITAN_QUERY_MAX_BYTES < 16_000


def test_an_embedding_is_not_sent_after_its_reservations_day(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Admitted in the last second of the year, S4 starts on the new one: Titan would bill
    # the embedding on January's day under December's reservation. S4 sends nothing, and
    # the release settles on December, the day the reservation holds.
    clock = [at("2026-12-31 23:59:59")]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    real = models.query_embedder
    embedded: list[str] = []

    class StartsAfterMidnight:
        def __init__(self, s: Any) -> None:
            self.inner = real(s)
            self.id = self.inner.id
            clock[0] = at("2027-01-01 00:00:01")

        def embed_query(self, text: str) -> tuple[np.ndarray, int]:
            embedded.append(text)
            vector_and_tokens: tuple[np.ndarray, int] = self.inner.embed_query(text)
            return vector_and_tokens

    monkeypatch.setattr(models, "query_embedder", StartsAfterMidnight)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0 and embedded == []
    assert _states(outcome)[-3:] == ["Retrieve", "Reconcile", "FailClosed"]
    [reservation] = reservations(runtime)
    assert reservation["day"]["S"] == "2026-12-31" and reservation["status"]["S"] == "settled"
