"""S3 cut after its reservation committed, on the real ASL: the visitor gets the
contract's 503, no model call is made, and the reservation is released, found by the
request id (CostGate's Catch goes to ReleaseCutReservation: S3's output never came back).

On Lambda this is S3 reaching its 2 s timeout after the transaction landed (a reply
trickled past the client's read timeout, say: docs/internals.md). Before, CostGate's Catch
went straight to FailClosed and each such message held a whole reserve on the day, month
and visitor totals until the day ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from local.engine.runtime import LocalRuntime
from steps import cost_gate
from steps.lib.money import ledger, pricing

from .conftest import QUESTION, VISITOR, day_total, reservations


class LambdaTimedOut(Exception):
    """Stands in for Lambda ending S3 at its timeout (the error the ASL's Catch sees)."""


@pytest.fixture
def cut_after_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ledger.reserve

    def reserve_then_cut(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # the transaction lands on the table
        raise LambdaTimedOut("Task timed out after 2.00 seconds")

    monkeypatch.setattr(cost_gate.ledger, "reserve", reserve_then_cut)


def test_a_cost_gate_cut_after_commit_fails_closed_and_releases_the_reserve(
    runtime: LocalRuntime, cut_after_commit: None
) -> None:
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    # The steps the run entered, by function: S6's runs ReleaseCutReservation.
    assert [step.state for step in outcome.steps][-3:] == ["CostGate", "Reconcile", "FailClosed"]
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"
    # Settled at the release's bound (the query embedding S4 never made), not the reserve.
    assert day_total(runtime) == pricing.release_micros(runtime.settings)
    assert day_total(runtime) < int(reservation["reservedMicros"]["N"])


def test_naive_without_the_release_the_cut_holds_the_whole_reserve(
    runtime: LocalRuntime, cut_after_commit: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same run with the release doing nothing, as CostGate's Catch did before.
    monkeypatch.setattr(
        ledger, "release_by_request", lambda *a, **k: ledger.Settlement("void", 0, 0)
    )
    runtime.send(QUESTION, ip=VISITOR)
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "open"
    assert day_total(runtime) == int(reservation["reservedMicros"]["N"]) > 0


def test_a_cost_gate_cut_before_its_transaction_voids_the_id(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cut_before(*args: Any, **kwargs: Any) -> Any:
        raise LambdaTimedOut("Task timed out after 2.00 seconds")

    monkeypatch.setattr(cost_gate.ledger, "reserve", cut_before)
    outcome = runtime.send(QUESTION, ip=VISITOR)
    assert outcome.status == 503 and runtime.model_calls == 0
    [void] = reservations(runtime)  # the id is claimed: S3's late transaction cannot land
    assert void["status"]["S"] == "void" and day_total(runtime) == 0
