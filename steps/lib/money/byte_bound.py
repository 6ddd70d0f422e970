"""The input bound that holds without seeing the tokenizer: one token per UTF-8 byte.

Claude's tokenizer is not public, so an estimate of it (``tokens.count_tokens``) is not a
bound: a run like ``a1b2c3...`` can cost one token per character. What does hold for the
byte-level BPE tokenizers that production models use:

- F1. Every token covers at least one byte of the UTF-8 text it encodes, so a text of ``n``
  bytes is at most ``n`` tokens (byte-level BPE: Radford et al. 2019, "Language Models are
  Unsupervised Multitask Learners", section 2.2; Sennrich et al. 2016 for BPE merges).
- F2. A provider may normalise text before tokenising it. NFKC can make text longer
  (U+FDFA is 3 bytes and 33 after NFKC; Unicode Standard Annex #15), so the bound takes
  the larger of the text and its NFKC form.
- F3. The chat framing (role markers, block separators) adds a few tokens per message and
  per request; the constants below are generous for any chat template we know of. They
  are the one assumption here that bytes cannot prove; exact metering (CountTokens,
  metering.py) does not rely on it.

Used where exact metering is unavailable (offline, a Region without CountTokens, a failed
or throttled count) and wherever client text is checked before any AWS call (S1, S3).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

MESSAGE_OVERHEAD_TOKENS = 16  # F3: role marker and separators of one message
REQUEST_OVERHEAD_TOKENS = 32  # F3: start/end of the whole request and the system block


def text_bound(text: str) -> int:
    """Tokens ``text`` can cost at most: its UTF-8 bytes, or its NFKC form's if larger."""
    raw = len(text.encode("utf-8", "surrogatepass"))
    normalised = unicodedata.normalize("NFKC", text)
    if normalised == text:
        return raw
    return max(raw, len(normalised.encode("utf-8", "surrogatepass")))


def prompt_bound(system: str, messages: Iterable[Mapping[str, Any]]) -> int:
    """The bound of a whole Converse request: every text it carries plus the framing."""
    total = REQUEST_OVERHEAD_TOKENS + text_bound(system)
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + sum(text_bound(t) for t in message_texts(message))
    return total


def fixed_prompt_bound(bare_system_tokens: int, message: str) -> int:
    """The part of every prompt that is never trimmed: the system block without grounding
    (``bare_system_tokens``, its bound) and the current message, with their framing."""
    return (
        REQUEST_OVERHEAD_TOKENS + bare_system_tokens + MESSAGE_OVERHEAD_TOKENS + text_bound(message)
    )


def message_texts(message: Mapping[str, Any]) -> list[str]:
    """The texts of one Converse message (S5 sends text blocks only)."""
    return [block["text"] for block in message.get("content", []) if "text" in block]


def cut_to_bound(text: str, limit: int) -> str:
    """A prefix of ``text`` (whole characters) whose bound is at most ``limit``.

    Bytes grow with the prefix; NFKC can compose across the cut, so the bound is only
    nearly monotonic: the bisection keeps only prefixes it has checked, so the result
    always fits, and is the longest that fits for any text NFKC leaves alone.
    """
    if text_bound(text) <= limit:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if text_bound(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return text[:low]
