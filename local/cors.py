"""CORS for POST /chat, as one pure decision: the widget embedded on another site's origin.

Given the request's ``Origin``, its method and the allow-list (cdk.json ``chatguard/edge``
``site_origins``), say which headers the answer carries and whether it is a preflight the
server answers by itself (204, no execution, no quota, no spend). An origin is allowed only
when it is exactly in the list: never a wildcard, never credentials. Any other origin gets
no ``Access-Control-Allow-Origin`` and the browser keeps the answer from the page (for a
preflight, it then never sends the POST at all).

CloudFront's response headers policy applies the same list on AWS
(infra/blocks/site_distribution.py); the local server calls ``decide`` on every /chat answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

ALLOWED_METHODS = "POST, OPTIONS"
ALLOWED_HEADERS = "Content-Type"  # application/json is not a CORS-safelisted content type
PREFLIGHT_MAX_AGE_SECONDS = 600
# scheme://host[:port], lower case, nothing else: what a browser sends as Origin.
_ORIGIN = re.compile(r"https?://[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?")


class OriginError(ValueError):
    """A site origin that a browser would never send; the message names it."""


@dataclass(frozen=True, slots=True)
class CorsDecision:
    headers: dict[str, str] = field(default_factory=dict)
    preflight: bool = False  # a browser's OPTIONS: answer 204 with `headers`, start nothing


def decide(origin: str | None, method: str, allowed: Collection[str]) -> CorsDecision:
    # A preflight is an OPTIONS a browser sends with an Origin; any other OPTIONS is just
    # a method /chat does not answer (405).
    preflight = method.upper() == "OPTIONS" and origin is not None
    headers: dict[str, str] = {"Vary": "Origin"} if allowed else {}
    if origin is not None and origin in allowed:
        headers["Access-Control-Allow-Origin"] = origin
        if preflight:
            headers["Access-Control-Allow-Methods"] = ALLOWED_METHODS
            headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
            headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_SECONDS)
    return CorsDecision(headers=headers, preflight=preflight)


def check_origins(values: Iterable[object]) -> tuple[str, ...]:
    """The allow-list as given, or OriginError naming the first entry a browser never sends
    (a path, a trailing slash, a wildcard, upper case, "null")."""
    origins = []
    for value in values:
        if not isinstance(value, str) or not _ORIGIN.fullmatch(value):
            raise OriginError(
                f"site origin {value!r} must be an exact origin like https://www.example.com "
                "(scheme and host in lower case, optional port, no path, no wildcard)"
            )
        origins.append(value)
    return tuple(origins)
