"""Markdown -> the plain text a visitor reads, rendered once at index time.

Every reply is shown as text (the widget never renders Markdown), and the degraded and
offline answers quote chunks as they are, so a chunk is stored as prose:

- paragraphs with their soft-wrapped lines joined by a space (a hard break stays a line
  break); blocks separated by a blank line;
- list items as lines: "• item" for bullets, "1. item" for ordered lists, nested items
  indented by two spaces per level;
- code blocks verbatim, inline code without its backticks;
- links and images as their text; emphasis, heading hashes and raw HTML tags dropped;
- table rows as lines of cells joined by " | ".

markdown-it-py does the parsing (CommonMark plus tables), so emphasis, nesting and code
are recognised by the same rules a Markdown site uses, not by regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

BULLET = "\u2022"
_MD = MarkdownIt("commonmark").enable("table")
_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"[ \t]+")


def inline_text(markdown: str) -> str:
    """One line of inline Markdown (a heading, a title) as plain text."""
    tokens = _MD.parseInline(markdown)
    return _inline(tokens[0].children or []) if tokens else ""


def markdown_to_text(markdown: str) -> str:
    """A Markdown fragment as plain text; see the module docstring for the rules."""
    state = _State()
    for token in _MD.parse(markdown):
        _block(token, state)
    return "\n\n".join(block for block in state.blocks if block.strip())


@dataclass
class _State:
    blocks: list[str] = field(default_factory=list)
    lists: list[list[int]] = field(default_factory=list)  # [ordered?, next number] per level
    lines: list[str] = field(default_factory=list)  # the list or table being built
    marker: str | None = None  # the bullet waiting for the item's first line
    cells: list[str] = field(default_factory=list)  # the table row being built
    rows: list[str] = field(default_factory=list)
    table: bool = False

    def emit(self, text: str) -> None:
        """A finished piece of text: a line of the open list/table, or a block of its own."""
        if self.lists:
            indent = "  " * (len(self.lists) - 1)
            prefix, self.marker = (self.marker or "  "), None
            lines = text.split("\n")
            self.lines.append(indent + prefix + lines[0])
            self.lines += [indent + "  " + line for line in lines[1:]]
        else:
            self.blocks.append(text)


def _block(token: Token, state: _State) -> None:
    kind = token.type
    if kind == "inline":
        if state.table:
            state.cells.append(_inline(token.children or []))
        else:
            state.emit(_inline(token.children or []))
    elif kind in ("fence", "code_block", "html_block"):
        _literal(token, state)
    elif kind in ("bullet_list_open", "ordered_list_open"):
        start = int(token.attrGet("start") or 1)
        state.lists.append([kind == "ordered_list_open", start])
    elif kind in ("bullet_list_close", "ordered_list_close"):
        state.lists.pop()
        if not state.lists:
            state.blocks.append("\n".join(state.lines))
            state.lines = []
    elif kind == "list_item_open":
        ordered, number = state.lists[-1]
        state.marker = f"{number}. " if ordered else f"{BULLET} "
        state.lists[-1][1] = number + 1
    elif kind == "table_open":
        state.table = True
    elif kind == "tr_close":
        state.rows.append(" | ".join(state.cells))
        state.cells = []
    elif kind == "table_close":
        state.table = False
        state.emit("\n".join(state.rows))
        state.rows = []


def _literal(token: Token, state: _State) -> None:
    """Code verbatim; an HTML block as the text between its tags."""
    if token.type == "html_block":
        text = _TAG.sub("", token.content).strip()
    else:
        text = token.content.rstrip("\n")
    if text:
        state.emit(text)


def _inline(children: Sequence[Token]) -> str:
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(_inline(child.children or []) or child.content)
    # Soft-wrapped source lines often carry trailing or doubled spaces; one space remains.
    return "\n".join(_SPACES.sub(" ", line).strip() for line in "".join(parts).split("\n"))
