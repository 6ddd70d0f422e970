"""The hard cap against a replay, on the real ASL with the real handlers: one visitor
collects three signed exchanges of dense letter/digit text (which a tokenizer that splits
letters from digits bills at one token a character), then twelve other addresses replay
that history at once with a new message of the same kind. Every message is billed at the
worst the provider could bill for what was sent (offline_usage "worst").

With S5 metering by the byte bound no reservation is outspent and the day stays within its
ceiling. The same burst with S5 metering by the project's own estimate (the first
version's rule) passes the ceiling: the test can fail.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from local.engine.runtime import LocalRuntime, Outcome
from steps.lib.money import metering, pricing
from steps.lib.money.byte_bound import (
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    message_texts,
)
from steps.lib.runtime.settings import Settings
from steps.lib.text import prompt, tokens

from .conftest import all_at_once, day_total, reservations

REPLAYERS = 12
DENSE = "a1b2c3d4e5f6g7h8i9j0" * 100  # 2,000 characters, letters split from digits


def _dense(n: int) -> str:
    return (str(n) + DENSE)[:2000]


def _collect_signed_history(runtime: LocalRuntime) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for n in range(3):
        outcome = runtime.send({"message": _dense(n), "history": history}, ip="192.0.2.200")
        assert outcome.status == 200 and outcome.body["sig"], outcome.body
        history += [
            {"role": "user", "content": _dense(n)},
            {"role": "assistant", "content": outcome.body["reply"], "sig": outcome.body["sig"]},
        ]
    return history


def _replay(runtime: LocalRuntime, history: list[dict[str, Any]]) -> list[Outcome]:
    def replayer(i: int) -> Outcome:
        body = {"message": _dense(100 + i), "history": history}
        return runtime.send(body, ip=f"198.51.100.{i + 1}")

    return all_at_once(REPLAYERS, replayer)


def _runtime(make_runtime: Callable[..., LocalRuntime]) -> LocalRuntime:
    # A day that holds about nine of these messages at their reserve, as in the report.
    probe = pricing.reserve_for(
        Settings(), DENSE, [{"content": DENSE}] * 6,
        bare_system=prompt.system_text([]), metering="bytes",
    ).micros  # fmt: skip
    ceiling = f"{(12.5 * probe) / 1_000_000:.6f}"
    return make_runtime(
        offline_usage="worst", daily_ceiling_usd=ceiling, visitor_cost_share="1",
        visitor_message_limit=50,
    )  # fmt: skip


@pytest.mark.slow
def test_a_replayed_dense_history_cannot_pass_the_ceiling(
    make_runtime: Callable[..., LocalRuntime],
) -> None:
    runtime = _runtime(make_runtime)
    history = _collect_signed_history(runtime)
    outcomes = _replay(runtime, history)

    assert len(outcomes) == REPLAYERS and {o.status for o in outcomes} == {200}
    assert any("sig" in o.body for o in outcomes) and any(o.body.get("degraded") for o in outcomes)
    for r in reservations(runtime):
        assert r["status"]["S"] == "settled"
        assert int(r["actualMicros"]["N"]) <= int(r["reservedMicros"]["N"])
    assert day_total(runtime) <= runtime.settings.daily_ceiling_micros


def _estimate(system: str, messages: list[dict[str, Any]]) -> int:
    texts = [t for m in messages for t in message_texts(m)]
    overhead = REQUEST_OVERHEAD_TOKENS + MESSAGE_OVERHEAD_TOKENS * len(messages)
    return overhead + tokens.count_tokens(system) + sum(tokens.count_tokens(t) for t in texts)


def _gate_all_before_any_answer(runtime: LocalRuntime) -> None:
    """Hold each replayer after S3 until all twelve have passed it: every reservation is
    taken before any answer settles, as a burst on Lambda may have it. Without the hold the
    overlap is up to the machine's scheduler: on a loaded machine the replayers went through
    one by one, each gate saw the previous bills, and the naive meter's overshoot hid."""
    gate = runtime._handlers["steps.cost_gate"]
    all_gated = threading.Barrier(REPLAYERS, timeout=60)

    def held(event: Any, context: Any) -> Any:
        out = gate(event, context)
        all_gated.wait()
        return out

    runtime._handlers["steps.cost_gate"] = held


@pytest.mark.slow
def test_the_same_replay_passes_the_ceiling_when_s5_meters_by_an_estimate(
    make_runtime: Callable[..., LocalRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = _runtime(make_runtime)
    history = _collect_signed_history(runtime)
    monkeypatch.setattr(metering, "prompt_bound", _estimate)  # the naive meter
    _gate_all_before_any_answer(runtime)
    _replay(runtime, history)

    outspent = [
        r for r in reservations(runtime)
        if int(r["actualMicros"]["N"]) > int(r["reservedMicros"]["N"])
    ]  # fmt: skip
    assert outspent
    assert day_total(runtime) > runtime.settings.daily_ceiling_micros
