"""The chat request contract: steps/lib/request/openapi.json's ChatRequest, checked in code.

API Gateway's request validator (and the local server playing it) apply the same schema;
S1 checks again because the state machine never trusts an upstream check, and adds what a
JSON schema cannot say well: no control characters, no lone surrogates, and at least one
letter or digit in the message and in each history turn. Each refusal names the offending
field so a client developer can fix the call from the message alone.

The letter-or-digit rule is S1's alone: a text of only whitespace or punctuation cannot be
answered (Converse on Anthropic models refuses a text block with no non-whitespace text,
after the reservation and the guardrail), so it is refused here, before any quota or ledger
write. Any script counts (Unicode categories L* and N*), except characters Unicode marks
Default_Ignorable (the Hangul fillers are letters that render as nothing: letters.py).
API Gateway's model validation is
JSON Schema draft 4, whose ``pattern`` is not promised Unicode property classes, so
openapi.json states the rule in prose and S1 is the authority.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, TypedDict

from ..money.byte_bound import fixed_prompt_bound
from ..runtime.errors import BadRequest
from ..runtime.settings import Settings
from ..text import prompt
from . import letters

REQUEST_FIELDS = frozenset({"message", "history", "page"})
TURN_FIELDS = frozenset({"role", "content", "sig"})
ROLES = ("user", "assistant")
PAGE_MAX_CHARS = 256
SIG_MAX_CHARS = 128
# fullmatch, not match: in Python "$" also matches before a trailing newline.
_PAGE = re.compile(r"/[A-Za-z0-9/._~-]*")
_ALLOWED_CONTROLS = frozenset("\n\t")


class Turn(TypedDict, total=False):
    role: str
    content: str
    sig: str


class ChatRequest(TypedDict):
    message: str
    history: list[Turn]
    page: str | None


def validate_request(body: object, s: Settings) -> ChatRequest:
    """Return the normalised request or raise BadRequest saying what is wrong."""
    obj = _object(body, "request body", REQUEST_FIELDS)
    if "message" not in obj:
        raise BadRequest("message is required")
    message = _words(_text(obj["message"], "message", s.message_max_chars), "message")
    if fixed_prompt_bound(prompt.bare_system_tokens(), message) > s.max_input_tokens:
        # Within the character limit, but its byte bound (dense scripts such as emoji or
        # CJK weigh up to 4 per character) leaves no prompt that fits max_input_tokens:
        # say so now, before any quota or spend.
        raise BadRequest(
            "message is too long for the assistant (too many bytes in UTF-8): please shorten it"
        )
    history = _history(obj["history"], s) if "history" in obj else []
    page = _page(obj["page"]) if "page" in obj else None
    return {"message": message, "history": history, "page": page}


def _object(value: object, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be a JSON object")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        names = ", ".join(repr(k[:40]) for k in unknown[:5])
        raise BadRequest(f"{where} has unknown field(s): {names}")
    return value


def _text(value: object, where: str, max_chars: int, *, min_chars: int = 1) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string, not {_json_type(value)}")
    if len(value) < min_chars:
        raise BadRequest(f"{where} must not be empty")
    if len(value) > max_chars:
        raise BadRequest(f"{where} is too long ({len(value)} characters; at most {max_chars})")
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if (category == "Cc" and char not in _ALLOWED_CONTROLS) or category == "Cs":
            raise BadRequest(f"{where} contains a control character at position {index}")
    return value


def _words(text: str, where: str) -> str:
    """``text`` when it holds a letter or a digit of any script, else BadRequest."""
    if letters.has_letter_or_digit(text):
        return text
    raise BadRequest(f"{where} must contain at least one letter or digit")


def _history(value: object, s: Settings) -> list[Turn]:
    if not isinstance(value, list):
        raise BadRequest(f"history must be an array, not {_json_type(value)}")
    if len(value) > s.history_max_turns:
        raise BadRequest(f"history has {len(value)} turns; at most {s.history_max_turns}")
    return [_turn(item, f"history[{i}]", s) for i, item in enumerate(value)]


def _turn(value: object, where: str, s: Settings) -> Turn:
    obj = _object(value, where, TURN_FIELDS)
    for name in ("role", "content"):
        if name not in obj:
            raise BadRequest(f"{where}.{name} is required")
    role = obj["role"]
    if not isinstance(role, str) or role not in ROLES:
        raise BadRequest(f"{where}.role must be 'user' or 'assistant'")
    turn: Turn = {
        "role": role,
        "content": _words(
            _text(obj["content"], f"{where}.content", s.history_turn_max_chars),
            f"{where}.content",
        ),
    }
    if "sig" in obj:
        turn["sig"] = _text(obj["sig"], f"{where}.sig", SIG_MAX_CHARS, min_chars=0)
    return turn


def _page(value: object) -> str:
    page = _text(value, "page", PAGE_MAX_CHARS)
    if not _PAGE.fullmatch(page):
        raise BadRequest("page must be a site path such as /posts/waf (letters, digits, / . _ ~ -)")
    return page


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
