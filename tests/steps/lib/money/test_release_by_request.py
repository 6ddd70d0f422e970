"""A cut S3's reservation, released knowing only the request id (ledger.release_by_request):
whatever order the cut, the release, its repeats and a transaction still in flight arrive
in, the totals end at the release's amount or at zero, never at a held reserve, and never
below zero."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steps.lib.money import ledger
from steps.lib.runtime.errors import ChatguardError

from .ledger_helpers import NOW, reserve, totals

RESERVE, RELEASED_AT = 5_000, 161  # the reserve; what a release settles at (the embedding)


def _release(aws, request_id="r1"):
    return ledger.release_by_request(
        aws.dynamodb, aws.table, request_id=request_id, actual_micros=RELEASED_AT, now=NOW
    )


def test_a_reservation_that_landed_is_found_by_its_id_and_released(aws):
    assert isinstance(reserve(aws, "r1", micros=RESERVE), ledger.Reservation)
    assert totals(aws) == (RESERVE, RESERVE, RESERVE)
    settled = _release(aws)
    assert settled == ledger.Settlement("settled", RELEASED_AT, RESERVE - RELEASED_AT)
    assert totals(aws) == (RELEASED_AT,) * 3
    assert aws.item("RES#r1", "RES")["status"]["S"] == "settled"


def test_naive_a_cut_reservation_left_alone_holds_the_whole_reserve(aws):
    # The ASL before: CostGate's Catch went straight to FailClosed, nothing released.
    reserve(aws, "r1", micros=RESERVE)
    assert totals(aws) == (RESERVE,) * 3


def test_an_id_that_reserved_nothing_is_voided_and_a_late_transaction_cannot_land(aws):
    assert _release(aws) == ledger.Settlement("void", 0, 0)
    with pytest.raises(ChatguardError, match="already exists"):  # S3's, still in flight
        reserve(aws, "r1", micros=RESERVE)
    assert totals(aws) == (0, 0, 0)
    assert aws.item("RES#r1", "RES")["status"]["S"] == "void"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    landed_first=st.booleans(),  # S3's transaction landed before the release ran
    late=st.booleans(),  # a transaction of S3's arrives after the release
    repeats=st.integers(min_value=1, max_value=3),  # the release itself replayed
)
def test_every_order_ends_released_or_empty_never_held(aws, landed_first, late, repeats):
    request_id = f"r-{landed_first}-{late}-{repeats}"
    before = totals(aws)
    if landed_first:
        reserve(aws, request_id, micros=RESERVE)
    outcomes = [_release(aws, request_id).status for _ in range(repeats)]
    if late:  # a second transaction for an id that exists never lands
        with pytest.raises(ChatguardError, match="already exists"):
            reserve(aws, request_id, micros=RESERVE)
    moved = tuple(after - was for after, was in zip(totals(aws), before, strict=True))
    if landed_first:
        assert outcomes == ["settled"] + ["already_settled"] * (repeats - 1)
        assert moved == (RELEASED_AT,) * 3
    else:
        assert outcomes == ["void"] * repeats
        assert moved == (0, 0, 0)
    status = aws.item(f"RES#{request_id}", "RES")["status"]["S"]
    assert status in ("settled", "void")  # never "open": no reserve is held


def test_a_table_that_fails_the_release_raises_and_writes_nothing(aws):
    from steps.lib.runtime.errors import DependencyUnavailable

    from .test_ledger import Failing

    with pytest.raises(DependencyUnavailable):
        ledger.release_by_request(
            Failing("InternalServerError"), aws.table, request_id="r1", actual_micros=1, now=NOW
        )
    assert aws.item("RES#r1", "RES") is None
