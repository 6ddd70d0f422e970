"""A page's blocks -> heading-delimited chunks (h1-h3), sized for grounding, stored as
plain text (plaintext.py: rendered from Markdown here, once, not on every answer).

- Each h1-h3 heading starts a section; its heading trail ("Page > Section > Sub") is the
  chunk's `heading`. Deeper headings (h4-h6) stay inside their section's text.
- A section longer than `max_tokens` is split on paragraph boundaries (never inside a
  fenced code block); one paragraph longer than that stays whole rather than be cut
  mid-sentence.
- A section shorter than `min_tokens` merges into its neighbour on the same page
  (the previous one, or the next for the first section), its heading kept as a line of
  text, so a one-line section does not become a chunk that matches everything weakly.
- With `member_sections` (on by default: MEMBER_SECTIONS), a Doxygen member's section
  (html_reader.DOXYGEN_MEMBER_TITLE) is never merged: a flag's one-line doc is the whole
  answer to a question about that flag, and merged it sits under a heading that does not
  name it ("Write Flags > Detailed Description > LMDB Command Line Tools"), its words
  lost among its neighbours'. Such a section is its own chunk, its heading trail naming
  the member ("Environment Flags > MDB_NOSYNC"), and nothing else merges into it.
  docs/benchmarks.md (bench:degraded) measures it against the merge it replaced: LMDB's
  S4 page MRR with no page 0.583 -> 0.699 beside the local model (the default) and S7's
  quoted page 0.56 -> 0.67, json-c's worst visitor gap 0.019 -> 0.000 and its lexical S7
  0.72 / 0.89 -> 0.78 / 0.94. The one figure it lowers is json-c's S4 page MRR with no
  page beside the hashing stand-in (an offline stand-in, not a deployed embedder): one
  question's page moves from the 5th grounded chunk to the 6th, 0.833 -> 0.815. Other
  generators' pages carry no member mark: their chunks are the same either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from steps.lib.grounding.knowledge import ANCHOR_PART, Chunk, chunk_document
from steps.lib.text.tokens import count_tokens

from .html_reader import markdown_literal
from .pages import HTML_SUFFIXES, Page
from .plaintext import inline_text, markdown_to_text

MAX_TOKENS = 400
MIN_TOKENS = 40
MEMBER_SECTIONS = True  # see the module docstring: measured, then adopted
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(slots=True)
class _Piece:
    heading: str  # the trail
    title: str  # the last heading of the trail, written into text when merged
    level: int
    text: str
    anchor: str = ""  # the heading's id on an HTML page ("": link by the title's slug)
    part: int = 0  # 1, 2... for the later parts of a section split for size
    member: bool = False  # a Doxygen member's section: never merged (module docstring)
    links: tuple[tuple[str, str], ...] = ()  # (href, text) in its text, as written


def chunk_page(
    page: Page,
    *,
    max_tokens: int = MAX_TOKENS,
    min_tokens: int = MIN_TOKENS,
    member_sections: bool = MEMBER_SECTIONS,
) -> list[Chunk]:
    pieces = [
        _Piece(
            piece.heading,
            piece.title,
            piece.level,
            text,
            piece.anchor,
            part,
            piece.member and member_sections,
            _links_in(text, piece.links),
        )
        for piece in _sections(page)
        for part, text in enumerate(_split(piece.text, max_tokens))
    ]
    pieces = _merge_tiny(pieces, min_tokens, max_tokens)
    return _to_chunks(page.path, pieces, html=page.source.lower().endswith(HTML_SUFFIXES))


def _sections(page: Page) -> list[_Piece]:
    trail: dict[int, str] = {}
    sections: list[_Piece] = []
    current = _Piece(inline_text(page.title), inline_text(page.title), 1, "")
    for block in page.blocks:
        if 1 <= block.level <= 3:
            sections.append(current)
            title = inline_text(block.text)  # "Keeping files *out*" -> "Keeping files out"
            trail = {lvl: text for lvl, text in trail.items() if lvl < block.level}
            trail[block.level] = title
            names = [trail.get(1, inline_text(page.title))]
            names += [trail[lvl] for lvl in (2, 3) if lvl in trail]
            current = _Piece(
                " > ".join(names), title, block.level, "", block.anchor, member=block.member
            )
        else:
            body = block.text if block.level == 0 else "#" * block.level + " " + block.text
            current.text = f"{current.text}\n\n{body}" if current.text else body
            current.links += block.links
    sections.append(current)
    # A heading with no text of its own (a parent heading) lives on in its children's trails.
    return [s for s in sections if s.text.strip()]


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block is one paragraph."""
    result: list[str] = []
    current: list[str] = []
    fence = ""
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker:
            fence = "" if fence and marker.group(1)[0] == fence[0] else fence or marker.group(1)
        if not line.strip() and not fence:
            if current:
                result.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        result.append("\n".join(current))
    return result


def _split(text: str, max_tokens: int) -> list[str]:
    if count_tokens(text) <= max_tokens:
        return [text]
    parts: list[str] = []
    current: list[str] = []
    used = 0
    for paragraph in paragraphs(text):
        cost = count_tokens(paragraph)
        if current and used + cost > max_tokens:
            parts.append("\n\n".join(current))
            current, used = [], 0
        current.append(paragraph)
        used += cost
    if current:
        parts.append("\n\n".join(current))
    return parts


def _merge_tiny(pieces: list[_Piece], min_tokens: int, max_tokens: int) -> list[_Piece]:
    merged: list[_Piece] = []
    carry: _Piece | None = None  # a tiny first section waiting for the next one
    for piece in pieces:
        if carry is not None and piece.member:
            merged.append(carry)  # a member's section keeps its own chunk
            carry = None
        if carry is not None:
            piece = _Piece(
                carry.heading,
                carry.title,
                carry.level,
                f"{carry.text}\n\n{_as_line(piece)}\n\n{piece.text}",
                carry.anchor,
                links=carry.links + piece.links,
            )
            carry = None
        if piece.member or count_tokens(piece.text) >= min_tokens:
            merged.append(piece)
        elif (
            merged
            and not merged[-1].member
            and count_tokens(merged[-1].text + piece.text) <= max_tokens
        ):
            merged[-1].text += f"\n\n{_as_line(piece)}\n\n{piece.text}"
            merged[-1].links += piece.links
        elif not merged:
            carry = piece
        else:
            merged.append(piece)
    if carry is not None:
        merged.append(carry)
    return merged


def _links_in(text: str, links: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The links of a section that lie in this part of it (a split section's parts each
    keep their own)."""
    return tuple(link for link in links if markdown_literal(link[1]) in text)


def _as_line(piece: _Piece) -> str:
    return "#" * min(piece.level + 1, 6) + " " + piece.title


def _to_chunks(page: str, pieces: list[_Piece], *, html: bool = False) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    latest: dict[str, str] = {}  # a heading's fragment -> that of its latest section
    used: set[str] = set()
    for piece in pieces:
        anchor = _fragment(piece, html)
        if piece.part:  # a later part of a split section: its section's link, numbered
            anchor = f"{latest.get(anchor, anchor)}{ANCHOR_PART}{piece.part + 1}"
        else:
            seen[anchor] = count = seen.get(anchor, 0) + 1
            # A second heading of the same name: "-2", as the demo site renders its id.
            suffix = f"{ANCHOR_PART if html else '-'}{count}" if count > 1 else ""
            anchor = latest[anchor] = anchor + suffix
        while anchor in used:  # ids are unique whatever the headings are called
            anchor += ANCHOR_PART
        used.add(anchor)
        text = markdown_to_text(piece.text.strip())  # what visitors read: plain prose
        draft = Chunk(f"{page}#{anchor}", page, piece.heading, text, 0, piece.links)
        chunks.append(replace(draft, tokens=count_tokens(chunk_document(draft))))
    return chunks


def _fragment(piece: _Piece, html: bool) -> str:
    """A Markdown page's sections are linked by their title's slug (the demo site renders
    the same ids); an HTML page's by the anchor the page gives the heading, and one it
    gives none is marked as no anchor ("~slug"), so no link points at an id not there."""
    if not html:
        return _slug(piece.title) or "top"
    return piece.anchor or f"{ANCHOR_PART}{_slug(piece.title) or 'top'}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
