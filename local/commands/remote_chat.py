"""`chatguard chat --server URL`: one message to a `chatguard serve` that is already running.

Starting the runtime costs a one-shot `chat` seconds (docs/benchmarks.md, "CLI"); a running
server answers in a fraction of one. Only when asked: the answer then comes from that
server's index, limits and ledger (its visitor quota and spend count this message, and its
edge rate rule sees this machine's loopback address), so the command says which server
answered, and without the flag `chat` always runs the workflow in-process.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any
from urllib.parse import urlsplit

# Each one shapes an in-process run only; the server decided its own when it started.
IN_PROCESS_ONLY = ("history", "knowledge", "site", "profile", "region", "guardrail")


class RemoteError(Exception):
    """The server cannot be asked: one line for the user."""


def problem(args: argparse.Namespace, default_ip: str) -> str | None:
    """Why these arguments cannot go to a server, or None."""
    given = [f"--{n}" for n in IN_PROCESS_ONLY if getattr(args, n, None) is not None]
    if args.model != "offline":
        given.append("--model")
    if args.ip != default_ip:
        given.append("--ip")
    if args.verbose:
        given.append("--verbose")
    if given:
        verb, them = ("shapes", "it") if len(given) == 1 else ("shape", "them")
        return f"{', '.join(given)} {verb} an in-process run; leave {them} out with --server"
    if args.message is None:
        return "--server sends one message: give it as an argument"
    parts = urlsplit(args.server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return (
            "--server takes the URL `chatguard serve` printed, e.g. http://127.0.0.1:8787, "
            f"not {args.server!r}"
        )
    return None


def ask(server: str, message: str, page: str | None) -> tuple[int, dict[str, Any], float]:
    """(status, body, ms) of POST /chat, as the widget sends it."""
    from ops.http import request

    payload: dict[str, Any] = {"message": message, "history": []}
    if page:
        payload["page"] = page
    started = time.perf_counter()
    try:
        reply = request("POST", server.rstrip("/") + "/chat", payload=payload, timeout=60)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        raise RemoteError(
            f"no chatguard serve answers at {server} ({reason}): start one with "
            "`chatguard serve`, or leave out --server"
        ) from None
    if reply.body is None:
        raise RemoteError(f"{server} answered HTTP {reply.status} without the chat's JSON")
    return reply.status, reply.body, (time.perf_counter() - started) * 1000


def shown(server: str, status: int, body: dict[str, Any], ms: float, *, as_json: bool) -> str:
    if as_json:
        return json.dumps({"status": status, "body": body, "server": server}, indent=2)
    from local.engine.results import Outcome

    from .render import reply_text

    where = f"answered by the chatguard serve at {server} in {ms:.0f} ms"
    steps = f"its steps: chatguard trace last --local {server}"
    return f"{reply_text(Outcome(status, body, ()))}\n\n  {where} ({steps})"
