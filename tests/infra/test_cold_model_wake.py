"""The cold model's wake timeline (infra/cold_model.py): a woken step is warm exactly when
its environment is ready by the time its real call arrives, and its margin says by how much.
Synthetic CPU figures, so the arithmetic is checked by hand, not against a measurement."""

from __future__ import annotations

import pytest

from infra import cold_model as cm

# Every step: 0.2 s of import CPU and 0.01 s of first-invocation CPU, at one vCPU.
FIGURES = {s: {"import": 0.2, "first": 0.01, "warm": 0.001} for s in cm.ANSWERED}
MEMORY = dict.fromkeys(cm.ANSWERED, cm.VCPU_MB)
INIT = cm.START_S + 0.2


def _cold(state: str) -> float:
    return cm.cold_step_of(FIGURES[state], state, MEMORY[state])


def test_the_wake_is_sent_after_s1_and_the_woken_steps_skip_their_init():
    timeline = cm.wake_timeline_of(FIGURES, MEMORY, delivery_s=0.0)
    sent = _cold("OriginVerify") + cm.states_entered("WakeLaterSteps") * cm.TRANSITION_S
    retrieve = timeline["Retrieve"]
    assert retrieve["init"] == pytest.approx(INIT)
    assert retrieve["margin"] == pytest.approx(retrieve["arrives"] - (sent + INIT))
    assert retrieve["warm"] is True
    assert retrieve["step"] == pytest.approx(_cold("Retrieve") - INIT)
    for state in ("OriginVerify", "Quota", "CostGate"):  # the gate stays cold
        assert (
            timeline[state]["step"] == pytest.approx(_cold(state)) and "warm" not in timeline[state]
        )


def test_a_delivery_later_than_the_margin_makes_that_step_cold_again():
    margin = cm.wake_timeline_of(FIGURES, MEMORY, delivery_s=0.0)["Retrieve"]["margin"]
    assert isinstance(margin, float) and margin > 0
    just_in_time = cm.wake_timeline_of(FIGURES, MEMORY, delivery_s=margin - 1e-6)
    too_late = cm.wake_timeline_of(FIGURES, MEMORY, delivery_s=margin + 1e-6)
    assert just_in_time["Retrieve"]["warm"] is True and too_late["Retrieve"]["warm"] is False
    assert too_late["Retrieve"]["step"] == pytest.approx(_cold("Retrieve"))


def test_with_every_wake_lost_the_message_is_the_all_cold_one():
    lost = cm.woken_message_of(FIGURES, MEMORY, delivery_s=60.0)
    assert lost == pytest.approx(cm.cold_message_of(FIGURES, MEMORY))
    won = cm.woken_message_of(FIGURES, MEMORY, delivery_s=0.0)
    assert lost - won == pytest.approx(3 * INIT)  # the three INITs left the path
