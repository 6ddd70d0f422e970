"""The CORS contract of POST /chat: which site origins may embed the widget, and what the
preflight allows. CloudFront's response headers policy applies it on AWS
(infra/blocks/site_distribution.py) and local/server/cors.py on the local server, both from here,
so infrastructure does not depend on the local runtime.

An origin is allowed only when it is exactly in the list (cdk.json ``chatguard/edge``
``site_origins``): never a wildcard, never credentials.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ALLOWED_METHODS = ("POST", "OPTIONS")
ALLOWED_HEADERS = ("Content-Type",)  # application/json is not a CORS-safelisted content type
PREFLIGHT_MAX_AGE_SECONDS = 600
# scheme://host[:port], lower case, nothing else: what a browser sends as Origin.
_ORIGIN = re.compile(r"https?://[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?")


class OriginError(ValueError):
    """A site origin that a browser would never send; the message names it."""


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
