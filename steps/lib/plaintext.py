"""Markdown markup -> plain text, for answers shown verbatim (the degraded step).

The words stay exactly as written; only the markup goes (heading hashes, emphasis,
inline-code backticks, link targets, code fences), because the widget renders every reply
as text and `**WAF**` or `### Windows` would show up literally.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")


def markdown_to_text(text: str) -> str:
    lines = []
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:  # code keeps every character
            lines.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            line = heading.group(1)
        line = _IMAGE_OR_LINK.sub(r"\1", line)
        line = _CODE.sub(r"\1", line)
        line = _STRONG.sub(r"\2", line)
        line = _EMPHASIS.sub(r"\1", line)
        lines.append(line)
    return "\n".join(lines)
