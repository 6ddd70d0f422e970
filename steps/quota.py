"""S2 Quota: the visitor (salted same-day hash of the source IP) may send one more message?

The address is parsed before any I/O, so a missing or malformed one fails closed without
touching SSM or DynamoDB. The salt is the only secret this step reads.
"""

from __future__ import annotations

import time
from typing import Any

from steps.lib.money import ledger
from steps.lib.request import identity
from steps.lib.runtime import clients, init_phase, observability, secrets
from steps.lib.runtime.settings import settings

init_phase.at_init(clients.dynamodb, clients.ssm)  # INIT phase on Lambda; no-op elsewhere

LIMITED = (
    "You have reached today's message limit for this chat. It resets at midnight UTC; "
    "the site's pages are still there to read in the meantime."
)


@observability.instrumented("Quota")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s = settings()
    address = event.get("viewerAddress")
    identity.network_of(address)  # IdentityError (fail closed) before any AWS call
    now = time.time()
    day = identity.day_of(now)
    salt = secrets.salt_for_day(secrets.get_secret(s.salt_param, s, now=now), day)
    visitor = identity.visitor_hash(address, day, salt)
    result = ledger.count_message(
        clients.dynamodb(), s.table_name, visitor=visitor, day=day, limit=s.visitor_message_limit
    )
    if not result.allowed:
        observability.decision("limited", visitor=visitor)
        return {
            "decision": "limited",
            "response": {"statusCode": 200, "body": {"reply": LIMITED, "limited": True}},
        }
    observability.decision("allowed", visitor=visitor, msg_count=result.count)
    return {"decision": "allowed", "visitor": visitor, "day": day}
