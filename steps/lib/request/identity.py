"""Who is this visitor? A salted, same-day hash of the source IP alone.

The IP comes only from ``CloudFront-Viewer-Address``, which CloudFront sets from the TCP
connection; ``X-Forwarded-For`` and ``User-Agent`` are client-controlled and never reach
this module, so changing them cannot mint a fresh quota. An IPv6 visitor usually owns a
whole /64, so the hash covers the /64 network, not the single address. The raw address is
parsed, hashed and dropped here: it is never returned, logged or stored.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from datetime import UTC, datetime

from ..runtime.errors import IdentityError

_BRACKETED = re.compile(r"^\[([0-9A-Fa-f:.]+)\]:(\d{1,5})$")
_PORT = re.compile(r"^\d{1,5}$")
HASH_HEX_CHARS = 16
IPV6_PREFIX = 64


def day_of(now: float) -> str:
    """The UTC day (yyyy-mm-dd) of a Unix timestamp: the quota's and the salt's period."""
    return datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m-%d")


def day_ended(day: str, now: float) -> bool:
    """Whether the UTC ``day`` of a reservation is over at ``now``: a billed call sent
    then would spend the new day's money on the old day's account, so none is sent."""
    return day_of(now) != day


def network_of(viewer_address: object) -> str:
    """The identity part of a viewer address: an IPv4 address or an IPv6 /64 network.

    Accepts ``ip:port``, ``[v6]:port`` and CloudFront's unbracketed ``v6:port``; anything
    else (missing, no port, a zone id, a hostname) raises IdentityError: no identity, no quota,
    no model call.
    """
    if not isinstance(viewer_address, str) or not viewer_address or len(viewer_address) > 64:
        raise IdentityError("viewer address is missing or not a string")
    host, port = _split(viewer_address.strip())
    if not _PORT.match(port) or int(port) > 65535:
        raise IdentityError("viewer address has no valid port")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise IdentityError("viewer address is not an IP address") from None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id is not None:
            raise IdentityError("viewer address carries a zone id")
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is the IPv4 visitor a.b.c.d
            return str(ip.ipv4_mapped)
        if ip.sixtofour is not None:  # 6to4: one IPv4 host owns all of 2002:a.b.c.d::/48,
            return str(ip.sixtofour)  # 65,536 /64s, so it is that IPv4 visitor
        return str(ipaddress.IPv6Network((ip, IPV6_PREFIX), strict=False))
    return str(ip)


def visitor_hash(viewer_address: object, day: str, salt: str) -> str:
    """sha256("<ip or /64>|<day>|<salt>"), 16 hex characters: unlinkable across days."""
    if not salt:
        raise IdentityError("visitor salt is empty")
    material = f"{network_of(viewer_address)}|{day}|{salt}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:HASH_HEX_CHARS]


def _split(value: str) -> tuple[str, str]:
    bracketed = _BRACKETED.match(value)
    if bracketed:
        return bracketed.group(1), bracketed.group(2)
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise IdentityError("viewer address has no port")
    return host, port
