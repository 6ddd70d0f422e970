"""S5 Invoke: the one billable call. Never retried; once the request may have been sent,
any failure leaves the reservation standing (over-counts, never under-counts). The only
step that reads the signing key.

Before anything billable, S5 derives from its reservation's ``reservedMicros`` and the
prices S5 holds the input tokens it pays for, then picks the fullest prompt that fits them
by an exact count or a bound (metering.py). Then the guardrail assesses the message
(ApplyGuardrail) and, unless it blocks it, Converse answers. Right before each of these two
billed calls, one check (money/billed_calls.py): the reservation's day is still today and
the call can end within the run's time budget. The same ``Sender`` knows whether anything
has been sent: every failure before the first billed call (the signing key unreadable,
CountTokens broken, a check refusing) is NotSent and the state machine releases the
reservation; from then on a failure leaves it standing. S5 returns the cost at its own
prices, so a settlement by an S6 that still runs older (cheaper) prices during a deploy
cannot under-count.
"""

from __future__ import annotations

import time
from typing import Any

from steps.lib.money import billed_calls, metering, pricing
from steps.lib.providers import models
from steps.lib.request import signing
from steps.lib.runtime import clients, init_phase, observability, secrets, wake
from steps.lib.runtime.errors import NotSent
from steps.lib.runtime.settings import settings
from steps.lib.text import prompt

# INIT phase on Lambda; no-op elsewhere.
init_phase.at_init(
    clients.ssm, clients.bedrock_runtime, clients.bedrock_guard, clients.bedrock_count
)

GUARDRAIL_INTERVENED = "guardrail_intervened"


@wake.answers_wake  # the wake starts this environment and nothing else
@observability.instrumented("Invoke")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    reservation = event["reservation"]
    sender = billed_calls.Sender(reservation["day"], billed_calls.Budget.of(event.get("budget")))
    try:
        return _answer(settings(), event, sender)
    except Exception as exc:  # before anything was sent: NotSent, the reservation is released
        failure = sender.failure(exc)
        if failure is exc:
            raise
        raise failure from exc


def _answer(s: Any, event: dict[str, Any], sender: billed_calls.Sender) -> dict[str, Any]:
    request, reservation = event["request"], event["reservation"]
    message, now, responder = request["message"], time.time(), models.responder(s)
    key = secrets.get_secret(s.signing_key_param, s)  # read once: verify history, then sign
    keys = secrets.accepted_values(key, now, s.secret_grace_seconds)
    fitted, allowance = _fit(s, event, keys, responder.count_tokens)
    converse_worst = clients.converse_timeouts(s).worst
    if s.guardrail_id:  # not started unless Converse can follow it within the budget
        sender.before("ApplyGuardrail", needs_seconds=clients.GUARDRAIL.worst + converse_worst)
        verdict = responder.guard(message)
    else:
        verdict = models.GuardVerdict(False)
    units = max(verdict.units, pricing.assessed_units(s, message))
    if verdict.blocked:  # no model call: the guardrail's own answer, never signed
        reply = models.ModelReply(verdict.text, {}, GUARDRAIL_INTERVENED)
    else:
        sender.before("Converse", needs_seconds=converse_worst)  # the guardrail took time
        reply = responder.converse(system=fitted.prompt.system, messages=fitted.prompt.messages)
    usage = models.usage_of(reply)
    cost = pricing.actual_micros(s, usage, int(event.get("embeddingTokens") or 0), units)
    observability.decision(
        "blocked" if verdict.blocked else "answered", stop_reason=reply.stop_reason,
        dropped_turns=fitted.prompt.dropped_turns, metering=fitted.metering,
        metered_input_tokens=fitted.input_tokens, input_allowance=allowance,
        count_calls=fitted.count_calls, count_failed=fitted.count_failed,
        cost_micros=cost, reserved_micros=int(reservation["reservedMicros"]), **usage,
    )  # fmt: skip
    return {
        "reply": reply.text,
        "sig": "" if verdict.blocked else _sig(message, reply.text, key.current),
        "usage": usage,
        "guardrailTextUnits": units,
        "costMicros": cost,
        "stopReason": reply.stop_reason,
    }


def _fit(
    s: Any, event: dict[str, Any], keys: tuple[str, ...], count: metering.Counter
) -> tuple[metering.Fitted, int]:
    """The prompt the reservation pays for, or NotSent (nothing billable has happened)."""
    reservation, request = event["reservation"], event["request"]
    reserved = int(reservation["reservedMicros"])
    allowance = pricing.input_allowance(s, reserved, guarded_text=request["message"])
    if allowance < 0:
        raise NotSent(f"a reservation of {reserved} micro-USD cannot pay for any prompt")
    candidates = prompt.candidates(
        s, request["message"], request.get("history") or [], event.get("grounding") or [], keys
    )
    return metering.fit(candidates, allowance, count), allowance


def _sig(message: str, reply: str, key: str) -> str:
    """The exchange's signature. A blocked exchange gets none (""): it never comes back as
    history, so a blocked question cannot reach the model unassessed as an older turn."""
    return signing.sign(signing.exchange(message, reply), key)
