"""The check before every billed call and the sent tracker (money/billed_calls.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steps.lib.money.billed_calls import Budget, Sender
from steps.lib.request import identity
from steps.lib.runtime.errors import DependencyUnavailable, ModelError, NotSent
from tests.clock import at

MIDNIGHT = at("2027-01-01 00:00:00")
DAY = "2026-12-31"
started = st.floats(min_value=MIDNIGHT - 120, max_value=MIDNIGHT - 1, allow_nan=False)
offsets = st.floats(min_value=0, max_value=60, allow_nan=False)
needs = st.floats(min_value=0, max_value=30, allow_nan=False)


@given(started, offsets, needs, st.floats(min_value=1, max_value=30))
def test_a_call_goes_out_only_on_its_day_and_only_if_it_can_end_within_the_budget(
    start: float, offset: float, need: float, within: float
) -> None:
    now = start + offset
    sender = Sender(identity.day_of(start), Budget(start, within), clock=lambda: now)
    allowed = identity.day_of(now) == identity.day_of(start) and now + need <= start + within
    if allowed:
        sender.before("Converse", needs_seconds=need)
        assert sender.sent
    else:
        with pytest.raises(NotSent):
            sender.before("Converse", needs_seconds=need)
        assert not sender.sent


@given(offsets)
def test_after_a_first_call_a_refusal_leaves_the_reservation_standing(offset: float) -> None:
    clock = [MIDNIGHT - 1]
    sender = Sender(DAY, None, clock=lambda: clock[0])
    sender.before("ApplyGuardrail", needs_seconds=0)
    clock[0] = MIDNIGHT + offset
    with pytest.raises(ModelError):  # not NotSent: the guardrail may have billed
        sender.before("Converse", needs_seconds=0)


def test_any_failure_before_the_first_call_is_not_sent_and_none_after() -> None:
    sender = Sender(DAY, None, clock=lambda: MIDNIGHT - 10)
    cause = DependencyUnavailable("SSM GetParameter failed")
    assert isinstance(sender.failure(cause), NotSent)
    sender.before("Converse", needs_seconds=0)
    assert sender.failure(cause) is cause


@pytest.mark.parametrize(
    "raw",
    [{"startedAt": "yesterday", "withinSeconds": 21}, {"startedAt": "2026-12-31T10:00:00"},
     {"startedAt": "2026-12-31T10:00:00", "withinSeconds": 0},
     {"startedAt": "2026-12-31T10:00:00", "withinSeconds": 21}],  # no time zone
)  # fmt: skip
def test_a_malformed_budget_sends_nothing(raw: dict[str, object]) -> None:
    with pytest.raises(NotSent):
        Budget.of(raw)


def test_the_budget_reads_the_context_objects_start_time() -> None:
    budget = Budget.of({"startedAt": "2026-12-31T23:59:40.500Z", "withinSeconds": 21})
    assert budget is not None and budget.deadline == at("2027-01-01 00:00:01") + 0.5
