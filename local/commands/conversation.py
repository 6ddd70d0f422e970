"""A conversation for `chatguard chat`: the signed turns a follow-up sends back.

As the widget does (widget/chatguard.js, ``historyFrom``), only completed, signed exchanges
are kept (a user turn followed by the answer the server signed), newest last, at most the
contract's ``history_max_turns``; limited, degraded and refused replies are not model turns.
The server still checks every signature: this module only decides what to send.

``--history FILE`` keeps the same turns in a JSON file between runs, for scripts: a list of
``{"role", "content", "sig"}`` objects, as the HTTP contract's ``history`` has them. A run
reads it, sends it, and writes it back with the new exchange appended.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Turn = dict[str, str]
ROLES = ("user", "assistant")


class ConversationError(Exception):
    """A history file that cannot be used: one line that says what to fix."""


def load(path: Path) -> list[Turn]:
    """The turns in a history file; a missing file is a new conversation."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversationError(f"cannot read the history file {path}: {exc}") from None
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConversationError(
            f"the history file {path} is not JSON ({exc}); it holds a list of "
            '{"role", "content", "sig"} turns: delete it to start a new conversation'
        ) from None
    return _turns(value, path)


def _turns(value: Any, path: Path) -> list[Turn]:
    if not isinstance(value, list):
        raise ConversationError(
            f"the history file {path} must hold a JSON list of turns, not "
            f"{type(value).__name__}: delete it to start a new conversation"
        )
    turns: list[Turn] = []
    for i, item in enumerate(value):
        where = f"the history file {path}, turn {i + 1}"
        if not isinstance(item, dict) or item.get("role") not in ROLES:
            raise ConversationError(f"{where}: needs a role of 'user' or 'assistant'")
        if not isinstance(item.get("content"), str) or not item["content"]:
            raise ConversationError(f"{where}: needs a non-empty content string")
        if "sig" in item and not isinstance(item["sig"], str):
            raise ConversationError(f"{where}: sig must be a string")
        unknown = set(item) - {"role", "content", "sig"}
        if unknown:
            raise ConversationError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        turns.append({k: item[k] for k in ("role", "content", "sig") if k in item})
    return turns


def to_send(turns: Sequence[Turn], max_turns: int) -> list[Turn]:
    """The newest signed exchanges that fit the contract's limit."""
    pairs: list[Turn] = []
    i = 0
    while i + 1 < len(turns):
        user, answer = turns[i], turns[i + 1]
        if user["role"] == "user" and answer["role"] == "assistant" and answer.get("sig"):
            pairs.extend((user, answer))
            i += 2
        else:
            i += 1
    keep = max_turns - max_turns % 2
    return pairs[len(pairs) - keep :] if keep else []


def after(turns: Sequence[Turn], message: str, status: int, body: Mapping[str, Any]) -> list[Turn]:
    """The conversation once this exchange is done: appended when it was a signed answer."""
    reply, sig = body.get("reply"), body.get("sig")
    answered = status == 200 and isinstance(reply, str) and reply and isinstance(sig, str)
    if not answered or body.get("limited") or body.get("degraded"):
        return list(turns)
    return [*turns, {"role": "user", "content": message},
            {"role": "assistant", "content": str(reply), "sig": str(sig)}]  # fmt: skip


def save(path: Path, turns: Sequence[Turn]) -> None:
    """Write the file whole or not at all (a reader never sees half of it)."""
    text = json.dumps(list(turns), indent=2, ensure_ascii=False) + "\n"
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent or Path("."), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError as exc:
        raise ConversationError(f"cannot write the history file {path}: {exc}") from None


KEY_FILE = "local-signing-key"


def local_signing_key() -> str:
    """The offline runtime's reply-signing key for `--history`: kept between runs in the
    user's private cache directory (local/engine/parse_cache.py), so a script's next run verifies
    the turns the previous one signed. Local only: a deployment's key is its own SSM
    parameter, generated in the account."""
    import secrets

    from local.engine.parse_cache import cache_dir

    where = cache_dir()
    if where is None:
        raise ConversationError(
            "--history needs the cache directory to keep the local signing key: unset "
            "CHATGUARD_CACHE_DIR or point it at a directory"
        )
    path = where / KEY_FILE
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_text(encoding="ascii").strip()
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            key = secrets.token_urlsafe(32)
            handle.write(key)
        return key
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversationError(f"cannot keep the local signing key in {where}: {exc}") from None
