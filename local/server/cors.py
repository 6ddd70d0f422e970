"""CORS for POST /chat, as one pure decision: the widget embedded on another site's origin.

Given the request's ``Origin``, its method and the allow-list (cdk.json ``chatguard/edge``
``site_origins``), say which headers the answer carries and whether it is a preflight the
server answers by itself (204, no execution, no quota, no spend). An origin is allowed only
when it is exactly in the list: never a wildcard, never credentials. Any other origin gets
no ``Access-Control-Allow-Origin`` and the browser keeps the answer from the page (for a
preflight, it then never sends the POST at all).

The allow-list's rules and the preflight's values are the request contract's
(steps/lib/request/cors.py), which CloudFront's response headers policy applies on AWS
(infra/blocks/site_distribution.py); the local server calls ``decide`` on every /chat answer.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from steps.lib.request.cors import (
    ALLOWED_HEADERS,
    ALLOWED_METHODS,
    PREFLIGHT_MAX_AGE_SECONDS,
    OriginError,
    check_origins,
)

__all__ = ["CorsDecision", "OriginError", "check_origins", "decide"]


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
            headers["Access-Control-Allow-Methods"] = ", ".join(ALLOWED_METHODS)
            headers["Access-Control-Allow-Headers"] = ", ".join(ALLOWED_HEADERS)
            headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_SECONDS)
    return CorsDecision(headers=headers, preflight=preflight)
