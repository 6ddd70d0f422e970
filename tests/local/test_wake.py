"""The wake on the real ASL: a quiet first message starts S4-S6's environments while the
gate runs, so their INIT leaves the message's path.

Every step's INIT is injected at the cold-path model's figures from source (S1-S3 their
whole cold step, on the path; S4-S6 their INIT, spent wherever their environment starts),
on the test's pinned clock, which is also the clock the engine's environment model reads
(local/engine/environments.py). The wake's event is delivered at once here: the assumed
delivery delay and each step's margin against it are bench-cold's (docs/benchmarks.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra import cold_model
from local.engine import environments
from local.engine.runtime import LocalRuntime
from steps.lib.runtime import quiet

from .conftest import ANSWERED_PATH, QUESTION, VISITOR, reservations
from .test_cold_message import NOON

GATE = ("OriginVerify", "Quota", "CostGate")
WOKEN = cold_model.WOKEN


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [NOON]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def _figures() -> dict[str, float]:
    memory = cold_model.memory()
    gate = {s: cold_model.cold_step(s, "source", memory[s]) + cold_model.TRANSITION_S for s in GATE}
    later = {s: cold_model.init_seconds(s, "source", memory[s]) for s in WOKEN}
    return gate | later


@pytest.fixture
def cold(
    clock: list[float], make_runtime: Callable[..., LocalRuntime]
) -> Callable[..., LocalRuntime]:
    """A runtime whose every step is cold at the model's figures, the wake delivered after
    ``delivery`` seconds."""

    def make(delivery: float = 0.0, **overrides: Any) -> LocalRuntime:
        runtime = make_runtime(guardrail_id="gr-test", guardrail_version="1", **overrides)

        def pause(seconds: float) -> None:
            clock[0] += seconds

        for state, seconds in _figures().items():
            runtime.cold_start(state, seconds, pause)
        runtime.wake_delivery(delivery)
        return runtime

    return make


def _calls(runtime: LocalRuntime) -> dict[str, list[environments.Served]]:
    served: dict[str, list[environments.Served]] = {}
    for s in runtime.served:
        served.setdefault(s.state, []).append(s)
    return served


def _answered_and_settled(runtime: LocalRuntime, outcome: Any) -> None:
    assert outcome.status == 200 and runtime.model_calls == 1
    assert [step.state for step in outcome.steps] == ANSWERED_PATH
    [reservation] = reservations(runtime)
    assert reservation["status"]["S"] == "settled"


def test_a_quiet_first_message_finds_the_later_steps_warm(clock, cold):
    runtime = cold()
    outcome = runtime.send(QUESTION, ip=VISITOR)
    _answered_and_settled(runtime, outcome)
    served = _calls(runtime)
    for state in WOKEN:  # the wake started the environment, the real call used it
        event, call = served[state]
        assert (event.kind, event.cold, call.kind, call.cold) == ("event", True, "call", False)
        assert call.environment == event.environment == 1
    # Only the gate's cold steps were on the message's path.
    figures = _figures()
    assert clock[0] - NOON == pytest.approx(sum(figures[s] for s in GATE))


def test_without_the_wake_every_later_init_is_on_the_path(clock, cold):
    # The naive variant on the same harness: S1 saw a verified request a moment ago, so it
    # does not find the site quiet and nothing is woken.
    runtime = cold()
    quiet.ENVIRONMENT.quiet_then_seen()
    outcome = runtime.send(QUESTION, ip=VISITOR)
    _answered_and_settled(runtime, outcome)
    assert all(s.kind == "call" and s.cold for s in runtime.served)
    assert clock[0] - NOON == pytest.approx(sum(_figures().values()))


def test_a_wake_that_blocks_puts_every_init_back_on_the_path(clock, cold, monkeypatch):
    # The other naive variant: the same wake invoked synchronously (RequestResponse) waits
    # for each INIT in the wake state, so the message is no faster than with no wake.
    from statemachine import loader

    text = loader.definition_text().replace('"Event"', '"RequestResponse"')
    monkeypatch.setattr(loader, "definition_text", lambda: text)
    runtime = cold()
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    assert clock[0] - NOON == pytest.approx(sum(_figures().values()))


def test_a_wake_that_loses_the_race_leaves_the_message_as_cold_as_before(clock, cold):
    # Delivered after S2 and S3: each woken environment is still in its INIT when the real
    # call comes, so Lambda starts another one. No worse than without the wake, and one more
    # INIT is billed per step.
    runtime = cold(delivery=5.0)
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    served = _calls(runtime)
    for state in WOKEN:
        event, call = served[state]
        assert event.cold and call.cold and call.environment == 2
    assert clock[0] - NOON == pytest.approx(sum(_figures().values()))


def test_a_throttled_wake_changes_nothing_but_the_speed(clock, cold):
    runtime = cold()
    for state in WOKEN:
        runtime.throttle(state, event=True)
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    assert all(s.kind == "call" and s.cold for s in runtime.served)  # no environment woken


def test_a_wake_that_fails_still_gives_the_answer(clock, cold, monkeypatch):
    def broken(self: Any, state: str) -> None:
        error = {"Code": "ServiceException", "Message": "Lambda was unable to queue it."}
        meta = {"HTTPStatusCode": 500, "RequestId": "r"}
        raise ClientError({"Error": error, "ResponseMetadata": meta}, "Invoke")

    monkeypatch.setattr(environments.Environments, "event", broken)
    runtime = cold()
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    assert runtime.wire.counts()["lambda", "Invoke"] == 6 + 3  # the wake was tried
    assert all(s.kind == "call" and s.cold for s in runtime.served)


def test_only_a_verified_request_wakes_and_a_warm_s1_wakes_nothing(clock, cold):
    runtime = cold()
    refused = runtime.send(QUESTION, ip=VISITOR, origin_ok=False)
    assert refused.status == 403
    assert runtime.wire.counts()["lambda", "Invoke"] == 1  # S1 only: no wake
    runtime.send(QUESTION, ip=VISITOR)
    assert runtime.wire.counts()["lambda", "Invoke"] == 1 + 6 + 3  # the first verified: woken
    for ip in ("192.0.2.2", "192.0.2.3", "192.0.2.4"):  # a burst: S1 warm, nothing woken
        assert runtime.send(QUESTION, ip=ip).status == 200
    assert runtime.wire.counts()["lambda", "Invoke"] == 1 + 6 + 3 + 3 * 6
    assert [s.kind for s in runtime.served].count("event") == 3


def test_an_s1_that_says_nothing_of_quiet_wakes_nothing_and_fails_nothing(clock, cold):
    # During a deploy the new ASL may meet an S1 of the previous version: OriginDecision
    # tests only whether `quiet` is present, so the message goes straight to S2 (a
    # comparison on a missing path would fail the run).
    runtime = cold()
    new_s1 = runtime._handlers["steps.origin_verify"]

    def previous_s1(event: Any, context: Any) -> Any:
        out = dict(new_s1(event, context))
        out.pop("quiet", None)
        return out

    runtime._handlers["steps.origin_verify"] = previous_s1
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    assert runtime.wire.counts()["lambda", "Invoke"] == 6
    assert all(s.kind == "call" for s in runtime.served)


def test_a_wake_whose_function_fails_reaches_no_one(clock, cold, monkeypatch):
    # An asynchronous invocation's error goes to Lambda's retry and age settings, not to the
    # caller: the message is answered, and the real calls still find the woken environments.
    from steps.lib.runtime import wake

    def broken(event: Any, context: Any = None) -> Any:
        raise RuntimeError("the wake broke")

    runtime = cold()
    for module in ("steps.retrieve", "steps.invoke", "steps.reconcile"):
        real = runtime._handlers[module]
        runtime._handlers[module] = lambda event, context, real=real: (
            broken(event) if wake.is_wake(event) else real(event, context)
        )
    _answered_and_settled(runtime, runtime.send(QUESTION, ip=VISITOR))
    woken_calls = [s for s in runtime.served if s.kind == "call" and s.state in WOKEN]
    assert [s.cold for s in woken_calls] == [False, False, False]


def _s1_quiet_on_every_output(runtime: LocalRuntime) -> None:
    """An S1 that (wrongly) says quiet on a refusal too: the rule that leads to the wake
    must not be the only thing between a refused request and S2."""
    real = runtime._handlers["steps.origin_verify"]
    runtime._handlers["steps.origin_verify"] = lambda event, context: {
        **real(event, context),
        "quiet": True,
    }


def test_a_refusal_that_says_quiet_is_still_refused(clock, cold):
    runtime = cold()
    _s1_quiet_on_every_output(runtime)
    refused = runtime.send(QUESTION, ip=VISITOR, origin_ok=False)
    assert refused.status == 403 and runtime.model_calls == 0
    assert runtime.wire.counts()["lambda", "Invoke"] == 1  # S1 only: no wake, no S2
    assert reservations(runtime) == []


def test_naive_a_presence_only_wake_rule_lets_a_quiet_refusal_through(clock, cold, monkeypatch):
    # The same S1 on the rule that tests `quiet` alone: the refused request is woken
    # into S2 and on, so origin verification would rest on S1 never setting the flag.
    from statemachine import loader

    definition = loader.definition_text()
    presence_only = definition.replace(
        '"And": [\n            { "Variable": "$.origin.decision", "StringEquals": "allowed" },'
        '\n            { "Variable": "$.origin.quiet", "IsPresent": true }\n          ],',
        '"Variable": "$.origin.quiet", "IsPresent": true,',
    )
    assert presence_only != definition
    monkeypatch.setattr(loader, "definition_text", lambda: presence_only)
    runtime = cold()
    _s1_quiet_on_every_output(runtime)
    runtime.send(QUESTION, ip=VISITOR, origin_ok=False)
    assert runtime.wire.counts()["lambda", "Invoke"] > 1 + 3  # S2 ran on a refused request
