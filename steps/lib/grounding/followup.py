"""The retrieval query of a message in a conversation (stdlib only: no numpy here).

A follow-up ("What happens if someone loses theirs?") names its topic only in earlier
turns, so the query folds in the visitor's earlier messages:

- the lexical side weighs each content term by the most recent turn that used it: 1 for
  the message, then EARLIER_TURN_WEIGHT, its square, ... for the user turns before it
  (at most EARLIER_TURNS of them), so the topic of the first question still counts two
  turns later, yet a message with its own terms is not outvoted by the past;
- the embedded text is those earlier user turns, newest kept first, within one history
  turn's length, + newline + the message: never longer than the previous turn + message
  could already be, so folding in more turns costs no more to embed than before. The
  local model embeds those turns and the message apart instead (Query.earlier and
  Query.message; local_embedder.conversation_vector): a short follow-up keeps its own
  meaning beside the topic of the first question.

The page the visitor is reading travels with the query: ranking gives its chunks a small
prior (retrieval.CURRENT_PAGE_WEIGHT), so the sections of the passkeys page stay among
the matches of "what happens if someone loses theirs?" asked there.

Chosen on the three-turn chains of docs/benchmarks.md: the previous turn alone lost the
topic of the first question by the third turn. Assistant turns are not folded in: the
previous answer's terms, and the page it cited as a prior, were measured on the same
chains and kept no more of them (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..text.tokens import terms

EARLIER_TURNS = 3
# 0.7: on the chains of docs/benchmarks.md, 0.6 to 0.8 kept one more of npm's ten chains
# than 0.5 and no fewer of the sample site's; 0.3 lost one there, 0.9 and 1 the npm one.
EARLIER_TURN_WEIGHT = 0.7


@dataclass(frozen=True, slots=True)
class Query:
    text: str  # what gets embedded
    weights: Mapping[str, float]  # content term -> weight, for lexical scoring
    own_terms: int  # content terms of the message itself (0: nothing to look for)
    page: str | None = None  # the page the visitor is reading, a prior for ranking
    # The message and the earlier user turns kept in `text` (oldest first), apart: the
    # local model embeds each turn on its own (local_embedder.conversation_vector).
    message: str = ""
    earlier: tuple[str, ...] = ()


def follow_up_query(
    message: str,
    history: Sequence[Mapping[str, str]],
    *,
    history_chars: int | None = None,
    page: str | None = None,
) -> Query:
    """The query for `message`, given the conversation before it (oldest first).

    The embedded text holds whole earlier user turns, newest first back to the oldest
    that fits, within `history_chars` characters (newlines included; None = the length
    of the previous user turn), then a newline and the message: at most
    history_chars + 1 + len(message) characters.
    """
    earlier = [
        turn["content"]
        for turn in history
        if turn.get("role") == "user" and isinstance(turn.get("content"), str) and turn["content"]
    ][-EARLIER_TURNS:]
    own = terms(message)
    weights = dict.fromkeys(own, 1.0)
    for back, turn in enumerate(reversed(earlier), start=1):
        for term in terms(turn):
            weights.setdefault(term, EARLIER_TURN_WEIGHT**back)
    budget = len(earlier[-1]) if earlier and history_chars is None else history_chars or 0
    kept: list[str] = []
    for turn in reversed(earlier):
        if len(turn) + sum(len(t) + 1 for t in kept) > budget:
            break
        kept.insert(0, turn)
    text = "\n".join([*kept, message])
    return Query(
        text=text,
        weights=weights,
        own_terms=len(own),
        page=page,
        message=message,
        earlier=tuple(kept),
    )


def plain_query(text: str) -> Query:
    """A query with no conversation around it: every content term weighs 1."""
    own = terms(text)
    return Query(text=text, weights=dict.fromkeys(own, 1.0), own_terms=len(own), message=text)
