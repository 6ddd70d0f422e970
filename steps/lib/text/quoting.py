"""Whole thoughts out of a section: its sentences, and the code blocks they point at (stdlib
only). Used by the offline stand-in for the model (providers/offline.py), which quotes.

A quoted sentence that points at something must bring it or not be quoted: "you would use
the following code:" ending a reply, or "the code above prints the URL" with no code above
it, reads as a broken answer. And a code comment ("# you will see the REQUEST, including
HEADERS") is code, never a sentence of prose: sentences come from prose blocks only
(blocks.py tells them apart).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import blocks, prose


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    code: bool  # a code block (rendered fenced), else one sentence of prose
    block: int  # the block of the section it comes from
    last: bool = False  # the last sentence of its prose block


def pieces(text: str) -> list[Piece]:
    """The section's sentences (prose blocks only) and code blocks, in order."""
    out: list[Piece] = []
    for n, block in enumerate(blocks.blocks(text)):
        if block.kind == "code":
            out.append(Piece(block.text, True, n))
            continue
        # A prose block's lines are tested by blocks.is_code_line: "you would use the
        # following code:" holds an '=' and is a sentence, not a line of code.
        found = prose.sentences(block.text, blocks.is_code_line)
        out += [Piece(s, False, n, last=i == len(found) - 1) for i, s in enumerate(found)]
    return out


def code_after(all_pieces: Sequence[Piece], sentence: Piece) -> Piece | None:
    """The code block right after the sentence's block, when the sentence ends that block."""
    nxt = [p for p in all_pieces if p.block == sentence.block + 1]
    return nxt[0] if sentence.last and nxt and nxt[0].code else None


def code_before(all_pieces: Sequence[Piece], sentence: Piece) -> Piece | None:
    """The code block right before the sentence's block."""
    before = [p for p in all_pieces if p.block == sentence.block - 1]
    return before[0] if before and before[0].code else None


def can_stand(all_pieces: Sequence[Piece], sentence: Piece) -> bool:
    """The sentence points at nothing, or at a block that is there to bring."""
    if blocks.points_back(sentence.text):
        return code_before(all_pieces, sentence) is not None
    if blocks.points_forward(sentence.text):
        return code_after(all_pieces, sentence) is not None
    return True


def whole_thoughts(all_pieces: Sequence[Piece], chosen: Sequence[Piece]) -> list[Piece]:
    """`chosen` sentences in order, each that points at code with its block beside it (after
    for "the following:", before for "the code above"); one whose block is not there is
    left out: quoted alone it would point at nothing."""
    out: list[Piece] = []
    for sentence in chosen:
        if blocks.points_back(sentence.text):
            code = code_before(all_pieces, sentence)
            if code is None:
                continue
            out += [p for p in (code, sentence) if p not in out]
        elif blocks.points_forward(sentence.text):
            code = code_after(all_pieces, sentence)
            if code is None:
                continue
            out += [p for p in (sentence, code) if p not in out]
        elif sentence not in out:
            out.append(sentence)
    return out


def within(pieces_: Sequence[Piece], fits: Callable[[list[Piece]], bool]) -> list[Piece]:
    """Pieces dropped whole from the end until `fits`; never ending on a sentence that
    points forward (its block was dropped) nor on a block whose sentence points back at
    it from after (that sentence was dropped: the block alone is fine, it is quoted)."""
    kept = list(pieces_)
    while kept and (not fits(kept) or dangling(kept[-1])):
        kept.pop()
    return kept


def dangling(piece: Piece) -> bool:
    """A sentence that announces a block: it cannot end a reply."""
    return not piece.code and blocks.points_forward(piece.text)


def render(pieces_: Sequence[Piece]) -> str:
    """Sentences run on with a space (a line ending without one keeps its break); a code
    block stands apart, fenced (blocks.fence)."""
    out = ""
    previous: Piece | None = None
    for piece in pieces_:
        if previous is None:
            out = blocks.fence(piece.text) if piece.code else piece.text
        elif piece.code or previous.code:
            out += "\n\n" + (blocks.fence(piece.text) if piece.code else piece.text)
        else:
            out += (" " if previous.text.endswith((".", "!", "?")) else "\n") + piece.text
        previous = piece
    return out
