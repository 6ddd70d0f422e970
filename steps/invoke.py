"""S5 Invoke: the one billable call. Never retried; once the request may have been sent,
any failure leaves the reservation standing (over-counts, never under-counts). The only
step that reads the signing key.

Before sending, S5 checks its own reservation: from the ``reservedMicros`` it is handed and
the prices it holds, it derives the input tokens that reservation pays for, and sends the
fullest prompt that fits them by an exact count or a bound (metering.py). If none fits it
raises NotSent, and the state machine releases the reservation: nothing was sent.
"""

from __future__ import annotations

import time
from typing import Any

from steps.lib import (
    clients,
    init_phase,
    metering,
    models,
    observability,
    pricing,
    prompt,
    secrets,
    signing,
)
from steps.lib.errors import NotSent
from steps.lib.settings import settings

init_phase.at_init(
    clients.ssm, clients.bedrock_runtime, clients.bedrock_count
)  # INIT phase on Lambda; no-op elsewhere

GUARDRAIL_INTERVENED = "guardrail_intervened"


@observability.instrumented("Invoke")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s, request = settings(), event["request"]
    key = secrets.get_secret(s.signing_key_param, s)
    keys = secrets.accepted_values(key, time.time(), s.secret_grace_seconds)
    message = request["message"]
    reserved = int(event["reservation"]["reservedMicros"])
    allowance = pricing.input_allowance(s, reserved, guarded_text=message)
    if allowance < 0:
        raise NotSent(f"a reservation of {reserved} micro-USD cannot pay for any prompt")
    responder = models.responder(s)
    candidates = prompt.candidates(
        s, message, request.get("history") or [], event.get("grounding") or [], keys
    )
    fitted = metering.fit(candidates, allowance, responder.count_tokens)
    built = fitted.prompt
    reply = responder.converse(
        system=built.system, messages=built.messages, guard_text=built.guard_text
    )
    usage = models.usage_of(reply)
    observability.decision(
        "answered", stop_reason=reply.stop_reason, dropped_turns=built.dropped_turns,
        metering=fitted.metering, metered_input_tokens=fitted.input_tokens,
        input_allowance=allowance, count_calls=fitted.count_calls,
        count_failed=fitted.count_failed, **usage,
    )  # fmt: skip
    return {
        "reply": reply.text,
        "sig": _sig(message, reply, key.current),
        "usage": usage,
        "guardrailTextUnits": max(
            reply.guardrail_text_units, pricing.assessed_units(s, built.guard_text, reply.text)
        ),
        "stopReason": reply.stop_reason,
    }


def _sig(message: str, reply: models.ModelReply, key: str) -> str:
    """The exchange's signature, or "" when the guardrail blocked it: an unsigned exchange
    never comes back as history, so a blocked question cannot reach the model unassessed
    by being replayed as an older turn."""
    if reply.stop_reason == GUARDRAIL_INTERVENED:
        return ""
    return signing.sign(signing.exchange(message, reply.text), key)
