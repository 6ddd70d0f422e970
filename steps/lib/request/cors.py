"""The CORS contract of POST /chat: which site origins may embed the widget, and what the
preflight allows. CloudFront's response headers policy applies it on AWS
(infra/blocks/site_distribution.py) and local/server/cors.py on the local server, both from here,
so infrastructure does not depend on the local runtime.

An origin is allowed only when it is exactly in the list (cdk.json ``chatguard/edge``
``site_origins``): never a wildcard, never credentials. The list is written as people copy
an address (``https://www.example.com/``, ``HTTPS://WWW.Example.com``) and kept as a browser
sends ``Origin`` (RFC 6454 section 6.1: scheme and host in lower case, no path), so such an
entry is normalised rather than refused. A deployment takes https:// origins only: a page on
http:// can be altered on its way to the visitor, widget included.
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


def normal_origin(value: str) -> str:
    """An address as copied from an address bar, as a browser sends it in ``Origin``:
    scheme and host in lower case, without the lone trailing slash (any other path stays,
    and is refused by ``check_origins``)."""
    scheme, sep, rest = value.strip().partition("://")
    if not sep:
        return value
    if rest.endswith("/") and "/" not in rest[:-1]:
        rest = rest[:-1]
    return f"{scheme.lower()}://{rest.lower()}"


def check_origins(values: Iterable[object], *, deployed: bool = False) -> tuple[str, ...]:
    """The allow-list as a browser sends origins (``normal_origin``), or OriginError naming
    the first entry no browser sends (a path, a wildcard, "null"); with `deployed`, an
    http:// origin is refused as well."""
    origins = []
    for value in values:
        origin = normal_origin(value) if isinstance(value, str) else value
        if not isinstance(origin, str) or not _ORIGIN.fullmatch(origin):
            raise OriginError(
                f"site origin {value!r} must be an exact origin like https://www.example.com "
                "(scheme and host, optional port, no path, no wildcard)"
            )
        if deployed and origin.startswith("http://"):
            raise OriginError(
                f"site origin {value!r}: a deployed chat takes https:// origins only (a page "
                f"on http:// can be altered in transit, widget included): use "
                f"{'https://' + origin.removeprefix('http://')}; http:// origins are for the "
                "local server (chatguard serve --site-origin)"
            )
        if origin not in origins:
            origins.append(origin)
    return tuple(origins)
