"""`chatguard chat`'s exchanges: one message with the conversation so far (local/
conversation.py decides which turns go), and the session that reads questions one a line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def exchange(runtime: Any, args: argparse.Namespace, turns: list[Any], message: str) -> Any:
    """One message with the conversation so far; the file (--history) is rewritten after a
    signed answer."""
    from local.engine.edge import EdgeRefusal, parse_body
    from local.engine.runtime import Outcome

    from .conversation import after, save, to_send

    settings = runtime.settings
    history = to_send(turns, settings.history_max_turns)
    request: dict[str, Any] = {"message": message, "history": history}
    if args.page:
        request["page"] = args.page
    # As the widget does: the oldest exchanges go first when the body would pass the limit.
    while request["history"] and len(json.dumps(request).encode()) > settings.body_max_bytes:
        request["history"] = request["history"][2:]
    raw = json.dumps(request).encode()
    try:
        body = parse_body(raw, settings)
        outcome = runtime.send(body, ip=args.ip)
    except EdgeRefusal as refusal:  # what API Gateway's validator (or WAF) would answer
        outcome = Outcome(refusal.status, {"error": _explained(refusal, raw, settings)}, ())
    turns = after(turns, message, outcome.status, outcome.body)
    if args.history:
        save(args.history, turns)  # a ConversationError is the command's one line
    return outcome, turns


def _explained(refusal: Any, raw: bytes, settings: Any) -> str:
    """The edge's words, and for a size block the limits it does not state (the web ACL's
    answer is a fixed text, the same for every request)."""
    if refusal.payload.get("blocked") != "size":
        return str(refusal.message)
    return (
        f"{refusal.message} (this request is {len(raw):,} bytes; the edge takes at most "
        f"{settings.body_max_bytes:,} bytes, and a message at most "
        f"{settings.message_max_chars:,} characters)"
    )


def session(runtime: Any, args: argparse.Namespace, turns: list[Any]) -> int:
    """Questions from the terminal (or a pipe, one a line) until end of input; each
    follow-up sends the answers signed so far, with this session's secrets."""
    from .render import reply_text

    interactive = sys.stdin.isatty()
    if interactive:
        print(
            "chatguard chat: one question a line; follow-ups see the answers so far. Ctrl-D ends.",
            file=sys.stderr,
        )
    while True:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return 0
        if not interactive and not line:
            return 0
        message = line.strip()
        if not message:
            continue
        outcome, turns = exchange(runtime, args, turns, message)
        if args.json:
            print(json.dumps(outcome.as_dict()), flush=True)
        else:
            print(reply_text(outcome) + "\n", flush=True)
