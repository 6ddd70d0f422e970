"""The retrieval query of a message in a conversation (stdlib only: no numpy here).

A follow-up ("What happens if someone loses theirs?") names its topic only in earlier
turns, so the query folds in the visitor's earlier messages:

- the lexical side weighs each content term by the most recent turn that used it: 1 for
  the message, then EARLIER_TURN_WEIGHT, its square, ... for the user turns before it
  (at most EARLIER_TURNS of them), so the topic of the first question still counts two
  turns later, yet a message with its own terms is not outvoted by the past;
- the embedded text is the previous user turn + newline + the message, as before: that is
  the length the embedding reserve is priced for (pricing.query_max_chars).

Assistant turns are not folded in: a reply quotes several sections, and its words pulled
the next turn towards whichever of them was longest (measured on the chains of
docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .tokens import terms

EARLIER_TURNS = 3
EARLIER_TURN_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Query:
    text: str  # what gets embedded
    weights: Mapping[str, float]  # content term -> weight, for lexical scoring
    own_terms: int  # content terms of the message itself (0: nothing to look for)


def follow_up_query(message: str, history: Sequence[Mapping[str, str]]) -> Query:
    """The query for `message`, given the conversation before it (oldest first)."""
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
    text = f"{earlier[-1]}\n{message}" if earlier else message
    return Query(text=text, weights=weights, own_terms=len(own))


def plain_query(text: str) -> Query:
    """A query with no conversation around it: every content term weighs 1."""
    own = terms(text)
    return Query(text=text, weights=dict.fromkeys(own, 1.0), own_terms=len(own))
