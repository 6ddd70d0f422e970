"""What the edge answers when WAF blocks POST /chat: JSON, never CloudFront's HTML page.

The web ACL returns these as custom response bodies (infra/blocks/edge_firewall.py), the
local server answers the same (local/engine/edge.py), and the widget shows each ``blocked`` kind
as its own state: a size block means "start a new conversation" (resending the same
history would be blocked forever), a rate block means "wait".
"""

from __future__ import annotations

import json

BLOCK_STATUS = 403
RATE_BLOCKED = {
    "error": "Too many requests from your address. Please wait a little and try again.",
    "blocked": "rate",
}
SIZE_BLOCKED = {
    "error": "The request is too large. Start a new conversation or send a shorter message.",
    "blocked": "size",
}


def body_text(block: dict[str, str]) -> str:
    """The exact bytes both the web ACL and the local server send."""
    return json.dumps(block, separators=(",", ":"))
