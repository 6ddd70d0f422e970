"""The wake (steps/lib/runtime/wake.py) and S1's quiet signal (steps/lib/runtime/quiet.py).

S4, S5 and S6 answer the exact wake payload at once: no ledger write, no Bedrock or Titan
call, no log line or metric. A payload that only resembles it is an input like any other:
the handler refuses it as before, still without a write or a model call. S1 reports quiet
only for a request it verified, and under a flood only once.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steps import invoke, origin_verify, reconcile, retrieve
from steps.lib.providers import models
from steps.lib.runtime import clients, observability, quiet, wake

from .conftest import load_event

HANDLERS = {"Retrieve": retrieve.handler, "Invoke": invoke.handler, "Reconcile": reconcile.handler}
QUIET = quiet.QUIET_AFTER_SECONDS


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class NoModel:
    """Any model or embedding call fails the test: recorded, then raised."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        raise AssertionError(f"a model seam was used: {name}")


class Steps:
    def __init__(self) -> None:
        self.started: list[str] = []

    def step_started(self, step: str, request_id: str | None) -> None:
        self.started.append(step)

    def step_finished(self, invocation: Any) -> None:
        pass


@pytest.fixture
def guarded(aws, monkeypatch) -> Iterator[tuple[NoModel, list[str], Steps]]:
    """No model seam may be used, every Bedrock client records any call it is asked to make
    (botocore's before-call event, ahead of any request), and each step start is heard."""
    no_model = NoModel()
    monkeypatch.setattr(models, "responder", lambda s: no_model)
    monkeypatch.setattr(models, "query_embedder", lambda s: no_model)
    bedrock_calls: list[str] = []
    for make in (clients.bedrock_runtime, clients.bedrock_guard, clients.bedrock_count):
        make().meta.events.register(
            "before-call", lambda model, **_: bedrock_calls.append(model.name)
        )
    steps = Steps()
    observability.add_listener(steps)
    yield no_model, bedrock_calls, steps
    observability.remove_listener(steps)


# -- the wake's answer -----------------------------------------------------------------


@pytest.mark.parametrize("state", sorted(HANDLERS))
def test_each_later_step_answers_the_wake_at_once_and_does_nothing_else(
    state, aws, guarded, capsys
):
    no_model, bedrock_calls, steps = guarded
    metrics_before = observability.local_metrics()
    assert HANDLERS[state](copy.deepcopy(wake.WAKE_PAYLOAD), None) == wake.WOKEN
    assert aws.count_items() == 0  # no ledger write
    assert no_model.calls == [] and bedrock_calls == []  # no model, embedding or guardrail
    assert steps.started == []  # not instrumented: no log line, metric or trace segment
    assert capsys.readouterr().err == ""
    assert observability.local_metrics() == metrics_before


def test_without_the_guard_the_wake_would_reach_the_handler_and_fail_there(aws, guarded):
    # The naive variant: the same handler without `answers_wake` takes the wake for a
    # message, logs a step and fails on the missing fields.
    _, _, steps = guarded
    unguarded = invoke.handler.__wrapped__  # functools.wraps keeps the instrumented handler
    with pytest.raises(KeyError):
        unguarded(copy.deepcopy(wake.WAKE_PAYLOAD), None)
    assert steps.started == ["Invoke"]


def _near_wake() -> st.SearchStrategy[Any]:
    """Payloads that resemble the wake payload without being it."""
    value = wake.WAKE_PAYLOAD["wake"]
    texts = st.text(max_size=40).filter(lambda t: t != value)
    json_values = st.one_of(
        st.none(), st.booleans(), st.integers(), texts, st.lists(st.just(value))
    )
    return st.one_of(
        st.builds(lambda v: {"wake": v}, json_values),  # another value
        st.builds(lambda k: {k: value}, st.text(max_size=8).filter(lambda k: k != "wake")),
        st.builds(  # the wake plus anything
            lambda k, v: {"wake": value, k: v},
            st.text(min_size=1, max_size=8).filter(lambda k: k != "wake"),
            json_values,
        ),
        st.builds(
            lambda t: {"wake": t}, st.sampled_from([value.upper(), value + " ", " " + value])
        ),
        st.just([wake.WAKE_PAYLOAD]),
        st.just({"wake": {"wake": value}}),
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payload=_near_wake(), state=st.sampled_from(sorted(HANDLERS)))
def test_a_payload_that_only_resembles_the_wake_is_refused_as_any_bad_input(
    payload, state, aws, guarded
):
    no_model, bedrock_calls, _ = guarded
    assert not wake.is_wake(payload)
    with pytest.raises((KeyError, TypeError, AttributeError, ValueError)):
        HANDLERS[state](payload, None)
    assert aws.count_items() == 0
    assert no_model.calls == [] and bedrock_calls == []


def test_the_exact_payload_with_its_value_of_another_type_is_not_the_wake():
    class Text(str):
        pass

    assert wake.is_wake({"wake": wake.WAKE_PAYLOAD["wake"]})
    assert not wake.is_wake({"wake": Text(wake.WAKE_PAYLOAD["wake"])})
    assert not wake.is_wake(dict.fromkeys(["wake"]))


# -- S1's quiet signal -----------------------------------------------------------------


def test_a_new_environment_is_quiet_then_warm_until_the_threshold_passes():
    clock = Clock()
    seen = quiet.LastSeen(clock)
    assert seen.quiet_then_seen() is True  # new environment
    clock.now += QUIET
    assert seen.quiet_then_seen() is False  # exactly at the threshold: still warm
    clock.now += QUIET + 1
    assert seen.quiet_then_seen() is True


def test_under_a_flood_only_the_first_request_wakes():
    clock, seen = Clock(), None
    seen = quiet.LastSeen(clock)
    woken = []
    for _ in range(1000):  # one request every 0.1 s for 100 s
        woken.append(seen.quiet_then_seen())
        clock.now += 0.1
    assert woken.count(True) == 1 and woken[0] is True


@pytest.fixture
def s1(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(quiet, "ENVIRONMENT", quiet.LastSeen(clock))
    return clock


def test_s1_says_quiet_only_for_a_request_it_verified(aws, s1):
    forbidden = load_event("origin_verify") | {"originVerify": "wrong"}
    bad = load_event("origin_verify") | {"body": {"message": 7}}
    for event in (forbidden, bad):
        out = origin_verify.handler(event, None)
        assert out["decision"] in ("forbidden", "bad_request") and "quiet" not in out
    # The refusals were not activity: the first verified request still finds the site quiet.
    assert origin_verify.handler(load_event("origin_verify"), None)["quiet"] is True
    s1.now += 1
    assert "quiet" not in origin_verify.handler(load_event("origin_verify"), None)


def test_s1_finds_the_site_quiet_again_after_the_threshold(aws, s1):
    assert origin_verify.handler(load_event("origin_verify"), None)["quiet"] is True
    s1.now += QUIET + 1
    assert origin_verify.handler(load_event("origin_verify"), None)["quiet"] is True
