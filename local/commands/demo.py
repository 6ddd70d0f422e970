"""`chatguard demo`: one scripted session in which each layer refuses in turn.

1. a direct call without the origin header        -> 403 at S1 (OriginVerify)
2. an ordinary visitor                            -> 200, a grounded answer
3. the same visitor past the per-visitor limit    -> 200 limited (S2 Quota)
4. many visitors until the day's ceiling trips    -> 200 degraded (S3 CostGate -> S7)
5. the table becomes unavailable                  -> 503 fail closed, no model call

Every step prints its per-step trace; the settings are small so each layer trips quickly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal

from local.engine.runtime import LocalRuntime, Outcome
from local.engine.wire import error_response
from steps.lib.runtime.settings import Settings

from .limits import released_line, usd
from .render import outcome_text

# Small enough that each layer trips within a few messages, large enough that one
# worst-case reservation (about $0.009 with the default token bounds) fits a visitor's share.
DEMO_LIMITS = {"visitor_message_limit": 3, "daily_ceiling_usd": "0.03", "visitor_cost_share": "0.5"}
QUESTION = {"message": "How does the rate-based rule protect the chat?", "page": "/"}
VISITOR = "192.0.2.10"
MAX_CROWD = 500


def demo_settings(base: Settings) -> Settings:
    return base.replace(**DEMO_LIMITS)


def run_demo(runtime: LocalRuntime, say: Callable[[str], None] = print) -> list[Outcome]:
    """Run the five scenes; returns their outcomes (the test checks each status)."""
    limits = runtime.settings
    scenes: list[tuple[str, Callable[[], tuple[Outcome, int]]]] = [
        ("1. a direct call that skips CloudFront (no origin header)",
         lambda: (runtime.send(QUESTION, ip=VISITOR, origin_ok=False), 1)),
        ("2. an ordinary visitor asks a question",
         lambda: (runtime.send(QUESTION, ip=VISITOR), 1)),
        (f"3. the same visitor keeps asking (limit {limits.visitor_message_limit}/day)",
         lambda: _until(runtime, "limited", lambda i: VISITOR)),
        (f"4. a crowd of visitors until the {usd(limits.daily_ceiling_micros)} daily ceiling",
         lambda: _until(runtime, "degraded", _crowd)),
        ("5. DynamoDB becomes unavailable", lambda: (_table_down(runtime), 1)),
    ]  # fmt: skip
    outcomes = []
    for title, scene in scenes:
        before = runtime.model_calls
        outcome, sent = scene()
        outcomes.append(outcome)
        say(f"\n== {title}\n")
        say(f'  asks: "{QUESTION["message"]}" (on page {QUESTION["page"]})\n')
        say(outcome_text(outcome))
        say(f"  messages sent: {sent} (the last is shown); "
            f"model calls: {runtime.model_calls - before}")  # fmt: skip
    spent = _spend(runtime)
    say(
        f"\nspend today: {usd(spent)} of the {usd(limits.daily_ceiling_micros)} "
        f"daily ceiling; model calls: {runtime.model_calls}"
    )
    paced = released_line(limits, spent, time.time())
    if paced:
        say(paced)
    return outcomes


def _crowd(i: int) -> str:
    """The i-th visitor of the crowd, from the documentation address ranges."""
    return f"198.51.100.{i % 250 + 1}" if i < 250 else f"203.0.113.{i % 250 + 1}"


def _until(runtime: LocalRuntime, flag: str, ip_of: Callable[[int], str]) -> tuple[Outcome, int]:
    """Send until a reply carries `flag`; returns the last outcome and how many were sent."""
    sent = 1
    outcome = runtime.send(QUESTION, ip=ip_of(0))
    while not outcome.body.get(flag) and sent < MAX_CROWD:
        outcome = runtime.send(QUESTION, ip=ip_of(sent))
        sent += 1
    return outcome, sent


def _table_down(runtime: LocalRuntime) -> Outcome:
    down = error_response(500, "InternalServerError", "injected: the table is unavailable")
    with runtime.wire.fault("dynamodb", down):
        return runtime.send(QUESTION, ip="192.0.2.99")


def _spend(runtime: LocalRuntime) -> int:
    total = Decimal(0)
    for item in runtime.ledger_items():
        if item["pk"]["S"] == "GLOBAL" and not item["sk"]["S"].startswith("MONTH#"):
            total += Decimal(item.get("costMicros", {}).get("N", "0"))
    return int(total)
