"""S1 OriginVerify: only CloudFront knows the origin secret; then the body's shape.

The header is compared in constant time with the current secret and, during a rotation's
grace period, the previous one. An empty header is refused before any SSM read.

An allowed request also says when the site looked quiet to this environment (``quiet:
true``, steps/lib/runtime/quiet.py; absent otherwise): the state machine then wakes S4-S6
while S2 and S3 run (steps/lib/runtime/wake.py). A refused request says nothing and counts
for nothing.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from steps.lib.request import contract
from steps.lib.runtime import clients, init_phase, observability, quiet, secrets
from steps.lib.runtime.errors import BadRequest
from steps.lib.runtime.settings import Settings, settings

init_phase.at_init(clients.ssm)  # INIT phase on Lambda; no-op elsewhere

FORBIDDEN = "Forbidden: this endpoint only accepts requests through the site."


@observability.instrumented("OriginVerify")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s = settings()
    if not _origin_ok(event.get("originVerify"), s):
        observability.decision("forbidden")
        return {
            "decision": "forbidden",
            "response": {"statusCode": 403, "body": {"error": FORBIDDEN}},
        }
    try:
        request = contract.validate_request(event.get("body"), s)
    except BadRequest as exc:
        # The reason up to ": ": what is after it (unknown field names) is client text.
        observability.decision("bad_request", reason=str(exc).split(": ", 1)[0])
        return {
            "decision": "bad_request",
            "response": {"statusCode": 400, "body": {"error": str(exc)}},
        }
    allowed: dict[str, Any] = {"decision": "allowed", "request": request}
    if quiet.ENVIRONMENT.quiet_then_seen():
        allowed["quiet"] = True  # only ever true: the state machine tests its presence
    observability.decision("allowed", quiet="quiet" in allowed)
    return allowed


def _origin_ok(header: object, s: Settings) -> bool:
    if not isinstance(header, str) or not header or not header.isascii():
        return False
    secret = secrets.get_secret(s.origin_secret_param, s)
    accepted = secrets.accepted_values(secret, time.time(), s.secret_grace_seconds)
    # Compare with every accepted value (no short-circuit), each in constant time.
    matches = [hmac.compare_digest(header.encode(), value.encode()) for value in accepted]
    return any(matches)
