"""S5 Invoke: the one billable call. Never retried; any failure leaves the reservation
standing (over-counts, never under-counts). The only step that reads the signing key.
"""

from __future__ import annotations

import time
from typing import Any

from steps.lib import clients, init_phase, models, observability, prompt, secrets, signing
from steps.lib.settings import settings

init_phase.at_init(clients.ssm, clients.bedrock_runtime)  # INIT phase on Lambda; no-op elsewhere


@observability.instrumented("Invoke")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s, request = settings(), event["request"]
    key = secrets.get_secret(s.signing_key_param, s)
    keys = secrets.accepted_values(key, time.time(), s.secret_grace_seconds)
    built = prompt.build_prompt(
        s, request["message"], request.get("history") or [], event.get("grounding") or [], keys
    )
    reply = models.responder(s).converse(
        system=built.system, messages=built.messages, guard_text=built.guard_text
    )
    usage = models.usage_of(reply)
    observability.decision(
        "answered", stop_reason=reply.stop_reason, dropped_turns=built.dropped_turns, **usage
    )
    return {
        "reply": reply.text,
        "sig": signing.sign(signing.exchange(request["message"], reply.text), key.current),
        "usage": usage,
        "guardrailTextUnits": reply.guardrail_text_units,
        "stopReason": reply.stop_reason,
    }
