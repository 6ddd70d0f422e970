"""The server's signature over each assistant reply (HMAC-SHA256, base64url).

The widget sends a reply back with its ``sig`` as history; a turn whose sig does not verify
was not written by this server and never reaches the model (invariant 5 in the README). What is
signed is the whole exchange (``exchange(question, reply)``), not the reply alone: a genuine
reply replayed after a question it never answered must not verify either.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable

_DOMAIN = b"chatguard-reply-v2\x00"  # keeps these MACs distinct from any other use of the key


def exchange(question: str, reply: str) -> str:
    """The signed text of one exchange: the user turn (length-prefixed) and its reply."""
    return f"{len(question)}:{question}{reply}"


def sign(reply: str, key: str) -> str:
    if not key:
        raise ValueError("signing key is empty")
    mac = hmac.new(key.encode("utf-8"), _DOMAIN + reply.encode("utf-8"), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode("ascii")


def verify(reply: str, sig: object, keys: Iterable[str]) -> bool:
    """True if ``sig`` is this reply's signature under any accepted key (constant time)."""
    if not isinstance(sig, str) or not sig.isascii():
        return False
    given = sig.encode("ascii")
    ok = False
    for key in keys:
        if key:
            # No early exit: every accepted key is tried, so timing says nothing about which.
            ok |= hmac.compare_digest(sign(reply, key).encode("ascii"), given)
    return ok
