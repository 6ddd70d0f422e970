"""Red team on the wake (issue 29): can a client make a step take a real call for the wake,
skip its work or the ledger, or make the wake cost more than it should?

Every request goes through the real ASL on the local engine, with the real handlers. Each
step S4-S6 is watched: what it was invoked with and what it answered. The wake is sent
only by WakeLaterSteps, after S1 verified the request and found the site quiet, so per
message the steps see either the exact wake payload three times (once each) or never.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from local.engine.runtime import LocalRuntime
from steps.lib.runtime import quiet, wake
from tests.local.conftest import QUESTION, VISITOR, all_at_once, reservations

WOKEN_MODULES = ("steps.retrieve", "steps.invoke", "steps.reconcile")
WAKE_TEXT = wake.WAKE_PAYLOAD["wake"]


class Watch:
    """Each invocation of S1 and of the woken steps: the event and the answer."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime
        self.lock = threading.Lock()
        self.s1: list[dict[str, Any]] = []
        self.seen: list[tuple[str, Any, Any]] = []  # module, event, answer
        for module in (*WOKEN_MODULES, "steps.origin_verify"):
            real = importlib.import_module(module).handler
            runtime._handlers[module] = self._watched(module, real)

    def _watched(self, module: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def run(event: Any, context: Any) -> Any:
            answer = real(event, context)
            with self.lock:
                if module == "steps.origin_verify":
                    self.s1.append(answer)
                else:
                    self.seen.append((module, event, answer))
            return answer

        return run

    def wakes(self) -> list[tuple[str, Any, Any]]:
        self.runtime._engine.settle_events()  # the asynchronous invocations have run
        return [s for s in self.seen if wake.is_wake(s[1])]

    def real_calls(self) -> list[tuple[str, Any, Any]]:
        return [s for s in self.seen if not wake.is_wake(s[1])]


def _unsettled(runtime: LocalRuntime) -> list[dict[str, Any]]:
    return [r for r in reservations(runtime) if r["status"]["S"] == "open"]


# A hostile body: the fields S1 reads, the wake's own text and key, S1's own output keys,
# unicode, huge values, and shapes that are not an object at all.
_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from([WAKE_TEXT, WAKE_TEXT.upper(), f" {WAKE_TEXT}", "wake", "\u0000", "\ufeff"]),
    st.just("x" * 20_000),
)
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=8,
)
_KEYS = st.sampled_from(
    ["message", "page", "history", "wake", "quiet", "decision", "request", "requestId",
     "originVerify", "woken", "reservation", "usage", "release"]
)  # fmt: skip
_WORDS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=60).filter(
    lambda t: any(c.isalnum() for c in t)
)
# Bodies S1 accepts, carrying the wake's text where a client can put it.
_VALID = st.fixed_dictionaries(
    {"message": st.one_of(_WORDS, st.sampled_from([WAKE_TEXT, QUESTION["message"]]))},
    optional={
        "page": st.sampled_from(["/posts/waf", "/wake", "/chatguard/start"]),
        "history": st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant"]),
                 "content": st.one_of(_WORDS, st.just(WAKE_TEXT))}
            ),
            max_size=2,
        ),
    },
)  # fmt: skip
BODIES = st.one_of(
    _VALID,
    _VALID.flatmap(lambda body: st.dictionaries(_KEYS, _VALUE, max_size=2).map(body.__or__)),
    st.dictionaries(_KEYS, _VALUE, max_size=4),
    st.just(dict(wake.WAKE_PAYLOAD)),
    _VALUE,
)


# What a client can send as X-Origin-Verify without the secret: near misses of it included.
FORGED: dict[str, Callable[[str], str]] = {
    "none": lambda secret: "",
    "space after": lambda secret: secret + " ",
    "space before": lambda secret: " " + secret,
    "one short": lambda secret: secret[:-1],
    "nul after": lambda secret: secret + "\u0000",
    "accent": lambda secret: "\u00e9" + secret[1:],
    "the wake": lambda secret: WAKE_TEXT,
}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    body=BODIES,
    origin=st.sampled_from(["CloudFront"] * 3 + sorted(FORGED)),
)
def test_no_client_input_makes_a_real_call_a_wake_or_skips_the_ledger(
    make_runtime: Callable[..., LocalRuntime], body: Any, origin: str
) -> None:
    # The edge's WAF blocks a body past what it inspects (infra/blocks/edge_firewall.py), far
    # below Step Functions' 256 KB state limit: no larger body reaches the workflow.
    assume(len(json.dumps(body)) < 64_000)
    runtime = _shared(make_runtime)
    watch = Watch(runtime)
    quiet.ENVIRONMENT.forget()  # every request meets a new S1 environment: it may wake
    items, model_calls = runtime.ledger_items(), runtime.model_calls
    if origin == "CloudFront":
        outcome = runtime.send(body, ip=VISITOR)
    else:
        forged = {"X-Origin-Verify": FORGED[origin](runtime.origin_secret)}
        outcome = runtime.send(body, ip=VISITOR, origin_ok=False, headers=forged)
    [s1] = watch.s1
    assert origin == "CloudFront" or s1["decision"] == "forbidden"
    DECISIONS.append(s1["decision"])
    STATUSES.append(outcome.status)
    wakes = watch.wakes()
    if s1["decision"] == "allowed":
        assert s1.get("quiet") is True
        assert sorted(m for m, _, _ in wakes) == sorted(WOKEN_MODULES)
    else:  # refused or bad: no flag, nothing woken, nothing written, no model call
        assert "quiet" not in s1 and quiet.ENVIRONMENT._last is None
        assert wakes == [] and watch.seen == []
        assert outcome.status in (400, 403)
        assert runtime.ledger_items() == items and runtime.model_calls == model_calls
    for _, event, answer in wakes:
        assert event == wake.WAKE_PAYLOAD and answer == wake.WOKEN
    for _, event, answer in watch.real_calls():  # a real call is never answered as a wake
        assert "requestId" in event and answer != wake.WOKEN
    if runtime.model_calls > model_calls:
        assert outcome.status == 200 and len(reservations(runtime)) > 0
    assert _unsettled(runtime) == []


DECISIONS: list[str] = []
STATUSES: list[int] = []


def test_the_bodies_reach_every_decision_of_s1() -> None:
    # Run after the property (file order): its examples were allowed, refused and bad, and
    # some answered, not one kind only.
    if not DECISIONS:
        pytest.skip("reads what the property test above saw: run the file, not this alone")
    assert {"allowed", "forbidden", "bad_request"} <= set(DECISIONS)
    assert 200 in STATUSES  # and some were answered: the ledger and the model were reached


_SHARED: list[tuple[Callable[..., LocalRuntime], LocalRuntime]] = []


def _shared(make_runtime: Callable[..., LocalRuntime]) -> LocalRuntime:
    """One runtime for every example of a test (make_runtime closes it after the test). The
    fixture is kept beside its runtime and compared by identity: a later test's fixture is
    another object, so it never gets a runtime already closed."""
    if not _SHARED or _SHARED[0][0] is not make_runtime:
        _SHARED[:] = [(make_runtime, make_runtime())]
    return _SHARED[0][1]


# -- cost under flood ------------------------------------------------------------------


@contextlib.contextmanager
def every_message_on_a_new_s1() -> Iterator[None]:
    """Lambda scaling S1 out: each verified request meets a new S1 environment (one that has
    seen nothing, so it finds the site quiet)."""
    original = quiet.ENVIRONMENT.quiet_then_seen

    def new_environment_each_time(quiet_after: float = quiet.QUIET_AFTER_SECONDS) -> bool:
        quiet.ENVIRONMENT.forget()
        return original(quiet_after)

    quiet.ENVIRONMENT.quiet_then_seen = new_environment_each_time  # type: ignore[method-assign]
    try:
        yield
    finally:
        del quiet.ENVIRONMENT.quiet_then_seen


def test_a_flood_over_new_s1_environments_wakes_three_per_message_at_most(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    # The worst case for the wake's cost: every message meets a new S1 environment (Lambda
    # scaling S1 out), all at once, so wakes and real calls share S4-S6 on the runtime's
    # threads. Three wakes per message at most, each message answered and settled.
    runtime = make_runtime()
    watch = Watch(runtime)
    with every_message_on_a_new_s1():
        count = 8
        outcomes = all_at_once(count, lambda i: runtime.send(QUESTION, ip=f"198.51.100.{i + 1}"))
    assert [o.status for o in outcomes] == [200] * count
    assert len(watch.wakes()) == 3 * count  # bounded: one per woken step per message
    assert runtime.model_calls == count and _unsettled(runtime) == []
    assert all(answer != wake.WOKEN for _, _, answer in watch.real_calls())


def test_a_flood_of_refused_requests_wakes_nothing(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    runtime = make_runtime()
    watch = Watch(runtime)
    bodies = [QUESTION, {"message": ""}, {"wake": WAKE_TEXT}, dict(QUESTION, quiet=True)]
    for i in range(12):
        quiet.ENVIRONMENT.forget()  # a new S1 environment each time: it would wake
        body = bodies[i % len(bodies)]
        outcome = runtime.send(body, ip=VISITOR, origin_ok=body is not QUESTION)
        assert outcome.status in (400, 403)
    assert watch.wakes() == [] and watch.seen == [] and runtime.ledger_items() == []
    assert quiet.ENVIRONMENT._last is None  # no refused request counted as activity


def test_naive_an_s1_that_flags_quiet_before_it_verifies(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    # The refused flood on an S1 that records the request before checking it: the flag is
    # then set on a refusal (the ASL still sends it to OriginRefused, but activity is
    # counted and the output carries it); the test above would see it.
    from steps import origin_verify

    real = origin_verify.handler.__wrapped__  # type: ignore[attr-defined]  # undecorated

    def flags_first(event: Any, context: Any) -> Any:
        answer = dict(real(event, context))
        if quiet.ENVIRONMENT.quiet_then_seen():
            answer["quiet"] = True
        return answer

    runtime = make_runtime()
    runtime._handlers["steps.origin_verify"] = flags_first
    quiet.ENVIRONMENT.forget()
    assert runtime.send(QUESTION, ip=VISITOR, origin_ok=False).status == 403
    assert quiet.ENVIRONMENT._last is not None


def test_a_cold_flood_wakes_once_per_step_per_message_and_settles_every_answer(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    # Every S4-S6 environment cold (the environment model: local/engine/environments.py) and
    # every message on a new S1, all at once: each wake starts an environment that is still
    # in its INIT when the real calls come, so calls start their own and wakes and calls
    # race for environments. Still one wake per woken step per message (so at most one
    # extra INIT each), every message answered, every reservation settled.
    runtime = make_runtime()
    for state in ("Retrieve", "Invoke", "Reconcile"):
        runtime.cold_start(state, 2.0, pause=lambda seconds: None)
    with every_message_on_a_new_s1():
        count = 6
        outcomes = all_at_once(count, lambda i: runtime.send(QUESTION, ip=f"198.51.100.{i + 1}"))
    assert [o.status for o in outcomes] == [200] * count and _unsettled(runtime) == []
    assert runtime.model_calls == count
    served = runtime.served
    for state in ("Retrieve", "Invoke", "Reconcile"):
        kinds = [s.kind for s in served if s.state == state]
        assert kinds.count("call") == count and kinds.count("event") == count
        assert any(s.cold for s in served if s.state == state and s.kind == "event")
