"""Prose out of a chunk's plain text: what an extracted reply may quote (stdlib only).

A chunk's text keeps the lines of its page: a merged section's heading as a line of its
own ("Background"), list items, lines of code. Quoted into a reply those read as a
heading running into the next sentence ("... and why Background Mira ..."), a bullet or
a code fragment mid-sentence, or a reply ending on a bare heading word ("Example"). The
offline responder quotes only `sentences`; the degraded answer drops trailing headings.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_CODE = re.compile(r"[=(){}\[\];<>|`]|^\$\s|^\s*(?:npm|npx|git|pip|curl|sudo|cd)\s")
HEADING_MAX_WORDS = 8


def is_heading(line: str) -> bool:
    """A short line that does not end a sentence: a heading kept as text."""
    text = line.strip()
    words = text.split()
    return (
        bool(words)
        and len(words) <= HEADING_MAX_WORDS
        and not text.endswith((".", "!", "?", ":", ";", ","))
    )


def is_code(line: str) -> bool:
    """A line of code or a command, not a sentence (a sentence ends with . ! or ?)."""
    text = line.strip()
    return bool(_CODE.search(text)) and not _SENTENCE_END.search(text)


def sentences(text: str, code_line: Callable[[str], bool] = is_code) -> list[str]:
    """The text's sentences, headings and code lines (`code_line`) left out, list markers
    removed."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip() or is_heading(line) or code_line(line):
            continue
        out += [s.strip() for s in _SPLIT.split(_BULLET.sub("", line)) if len(s.strip()) > 1]
    return out


def without_trailing_headings(text: str) -> str:
    """The text without the heading lines (and blank lines) at its end."""
    lines = text.rstrip().splitlines()
    while len(lines) > 1 and (not lines[-1].strip() or is_heading(lines[-1])):
        lines.pop()
    return "\n".join(lines).rstrip()
