"""Prose and code blocks of a chunk's plain text, and the sentences that point at code
(stdlib only).

The indexer keeps a page's code blocks verbatim as blank-line separated paragraphs
(indexer/plaintext.py, `<pre>` in HTML), with no marker. A paragraph is code when most of
its lines are code or commands (`is_code_line`) or start with an interactive prompt
(`>>> `, `$ `): Requests's docs write a session as several paragraphs of `>>>` lines.
Neighbouring code paragraphs are one block.

A reply carries a block as a Markdown fence (```), which the widget renders as a code
block with its line breaks and never as markup (widget/chatguard.js). A fence is longer
than any run of backticks inside the block, so code that holds a fence stays inside it
(CommonMark's rule for fenced code blocks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.|\$|#!|%)\s")
# A sentence that announces what comes next ("use the following code:", "for example:";
# "for example" inside a sentence brings its example with it)
# or refers to what came before it ("the code above"): on its own it points at nothing.
_POINTS_FORWARD = re.compile(
    r":\s*$|\b(?:the\s+following|as\s+follows|below|like\s+(?:this|so))\b",
    re.IGNORECASE,
)
_POINTS_BACK = re.compile(
    r"\b(?:(?:the|this)\s+(?:code|command|example|snippet|output)\s+above|above\s+"
    r"(?:code|command|example|snippet|output))\b",
    re.IGNORECASE,
)
_BACKTICKS = re.compile(r"`{3,}")
_COMMENT = re.compile(r"^\s*(?:#|//)\s")
_WORD = re.compile(r"[(\"'\u2018\u201c]?[A-Za-z][A-Za-z'\u2019-]*[)\"'\u2019\u201d.,;:!?]*")
SENTENCE_MIN_WORDS = 6
_SENTENCE_END = re.compile(r"[a-z\u2019)][.!?][\"'\u201d)]*$")
# Signs of code: an operator or bracket that prose rarely holds, a call (`name(`), a
# command at the start of the line.
_CODE_SIGN = re.compile(
    r"[={}\[\];<>|`]|\w\(|^\s*(?:npm|npx|git|pip3?|python3?|curl|sudo|cd|mkdocs|apt-get|"
    r"docker|make)\s"
)


@dataclass(frozen=True, slots=True)
class Block:
    kind: Literal["prose", "code"]
    text: str


def is_code_line(line: str) -> bool:
    """A prompt line, or a line with a sign of code that does not read as a sentence: a
    line of words ("All subclasses contain the following method(s):") is prose even with
    a bracket in it, and a bracket after a space ("Added chardet 5.0.0 (#6179)") is no
    sign of code at all."""
    if _PROMPT.match(line) or is_comment(line):
        return True
    if not _CODE_SIGN.search(line):
        return False
    words = line.split()
    if len(words) >= 3 and _SENTENCE_END.search(line.rstrip()):
        return False  # "Make Response.json() callable, not property."
    plain = sum(bool(_WORD.fullmatch(w)) for w in words)
    return not (len(words) >= SENTENCE_MIN_WORDS and plain * 10 >= 7 * len(words))


def is_comment(line: str) -> bool:
    """A code comment line ("# you will see the REQUEST, ..."): code, whatever it says.
    Page text never starts a line with '# ' (headings are rendered without their marks)."""
    return bool(_COMMENT.match(line))


def is_code_paragraph(paragraph: str) -> bool:
    """Most lines are code or commands, or it opens with an interactive prompt."""
    lines = [line for line in paragraph.splitlines() if line.strip()]
    if not lines:
        return False
    if _PROMPT.match(lines[0]):
        return True
    return sum(map(is_code_line, lines)) * 2 > len(lines)


def blocks(text: str) -> list[Block]:
    """The text as prose and code blocks, in order; neighbouring code paragraphs merged."""
    out: list[Block] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if not paragraph.strip():
            continue
        kind: Literal["prose", "code"] = "code" if is_code_paragraph(paragraph) else "prose"
        if out and out[-1].kind == kind == "code":
            out[-1] = Block("code", out[-1].text + "\n\n" + paragraph.rstrip())
        else:
            out.append(Block(kind, paragraph.rstrip() if kind == "code" else paragraph.strip()))
    return out


def points_forward(sentence: str) -> bool:
    """The sentence announces something after it ("... use the following code:")."""
    return bool(_POINTS_FORWARD.search(sentence.strip()))


def points_back(sentence: str) -> bool:
    """The sentence refers to code before it ("the code above")."""
    return bool(_POINTS_BACK.search(sentence))


def fence(code: str) -> str:
    """The block as a Markdown fence longer than any backtick run inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=2)
    bar = "`" * max(3, longest + 1)
    return f"{bar}\n{code}\n{bar}"


def with_fences(text: str) -> str:
    """The text with each code block fenced, prose as it was: the degraded answer's body."""
    return "\n\n".join(fence(b.text) if b.kind == "code" else b.text for b in blocks(text))
