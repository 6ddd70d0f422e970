"""Offline stand-ins for Bedrock, for local runs and tests. Not models.

- ``ExtractiveResponder`` answers WITHOUT a language model: it reads the reference block
  of the prompt back and quotes whole sentences of its first source (the best-ranked
  match, which the reply cites), those closest to the question, and reports usage the way
  Converse does. Deterministic. Its usage is either the project's estimate
  (``tokens.count_tokens``) or, with ``offline_usage = "worst"``, the worst case a provider
  could bill for exactly what was sent: the byte bound of the input, ``maxTokens`` of
  output and, from ``guard``, every guardrail unit the reserve allows for. It cannot count
  tokens exactly (there is no CountTokens offline), so S5 meters it by the byte bound.
- ``HashingQueryEmbedder`` embeds the query with the indexer's feature-hashing embedder
  (the offline stand-in for Titan), so query and index vectors live in one space.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..grounding.followup import follow_up_query
from ..money import pricing
from ..money.byte_bound import message_texts, prompt_bound, text_bound
from ..runtime.settings import Settings
from ..text import quoting, tokens
from ..text.prompt import REFERENCE_SOURCE
from .interface import CountNotOffered, GuardVerdict, ModelReply

if TYPE_CHECKING:
    import numpy as np

OFFLINE_PREFIX = "Offline answer (extracted from this site, no language model): "
NO_MATCH = "I could not find anything about that on this site, so I would rather not guess."
SENTENCES_PER_REPLY = 3


class ExtractiveResponder:
    """The offline stand-in for Converse: extracts, never generates."""

    def __init__(self, s: Settings) -> None:
        self._settings = s

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        raise CountNotOffered("the offline stand-in has no tokenizer to count with")

    def converse(self, *, system: str, messages: list[dict[str, Any]]) -> ModelReply:
        s = self._settings
        reply = compose_reply(system, messages, s.max_output_tokens)
        if s.offline_usage == "worst":
            return ModelReply(reply, _usage(prompt_bound(system, messages), s.max_output_tokens))
        prompt_tokens = tokens.count_tokens(system) + sum(
            tokens.count_tokens(_text_of(m)) for m in messages
        )
        return ModelReply(reply, _usage(prompt_tokens, tokens.count_tokens(reply)))

    def guard(self, text: str) -> GuardVerdict:
        """Never blocks (it is not a guardrail); reports the units a guardrail would bill:
        the fewest for this text, or with offline_usage "worst" the most the reserve allows."""
        s = self._settings
        worst = s.offline_usage == "worst"
        units = pricing.guardrail_unit_bound(s, text) if worst else pricing.assessed_units(s, text)
        return GuardVerdict(blocked=False, units=units)


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 0,
    }


class HashingQueryEmbedder:
    """The offline stand-in for Titan: the index's own hashing embedder, one query at a time."""

    def __init__(self, s: Settings) -> None:
        from .hashing_embedder import HashingEmbedder

        self._embedder = HashingEmbedder(s.embedding_dimensions)
        self._worst = s.offline_usage == "worst"
        self.id: str = self._embedder.id

    def embed_query(self, text: str) -> tuple[np.ndarray, int]:
        billed = (
            text_bound(text) + pricing.EMBEDDING_OVERHEAD_TOKENS
            if self._worst
            else tokens.count_tokens(text)
        )
        return self._embedder.embed([text])[0], billed


def _text_of(message: dict[str, Any]) -> str:
    return "\n".join(message_texts(message))


def compose_reply(system: str, messages: list[dict[str, Any]], max_tokens: int) -> str:
    """Whole thoughts of the FIRST reference source, or NO_MATCH when there is none.

    S4 puts the best-ranked match first in the grounding, and the first grounding chunk is
    always among the sources the reply cites (steps/retrieve.py), so quoting it alone
    means the reply quotes only what it cites. Within it, the sentences that share the
    most weight with the question (follow-up terms included) are kept, in their order;
    a sentence that points at a code block brings it, fenced, or is left out, and a code
    comment is never quoted as a sentence (text/quoting.py).
    """
    sources = [
        (html.unescape(m.group("heading")), html.unescape(m.group("text")))
        for m in REFERENCE_SOURCE.finditer(system)
    ]
    if not sources:
        return NO_MATCH
    users = [_text_of(m) for m in messages if m.get("role") == "user"]
    history = [{"role": "user", "content": text} for text in users[:-1]]
    query = follow_up_query(users[-1] if users else "", history)
    picked = _best_pieces(sources, query.weights)
    return _whole(OFFLINE_PREFIX, picked, max_tokens) if picked else NO_MATCH


def _pieces(text: str) -> list[quoting.Piece]:
    """The text's sentences and code blocks (a section that is only code has no sentence:
    its comments are code too, never prose)."""
    return quoting.pieces(text)


def _best_pieces(
    sources: list[tuple[str, str]], weights: Mapping[str, float]
) -> list[quoting.Piece]:
    """Up to SENTENCES_PER_REPLY sentences of the first source, best first by IDF x
    question weight of their distinct terms (the heading's terms count half), normalised
    by length, then put back in document order with the code they point at. With no
    overlap, its opening sentences."""
    heading, text = sources[0]
    found = _pieces(text)
    sentences = [p for p in found if not p.code and quoting.can_stand(found, p)]
    bags = [set(tokens.terms(p.text)) for p in sentences]
    # IDF over every sentence of the reference, so words common to all sources weigh little.
    everything = [set(tokens.terms(s)) for _, t in sources for s in _sentences(t)]
    df = Counter(t for bag in everything for t in bag)
    idf = {t: math.log(1 + len(everything) / df[t]) if df[t] else 1.0 for t in weights}
    bonus = 0.5 * sum(weights[t] * idf[t] for t in set(tokens.terms(heading)) & weights.keys())
    scored = []
    for position, bag in enumerate(bags):
        score = sum(weights[t] * idf[t] for t in bag & weights.keys())
        if score > 0:
            scored.append((-(score + bonus) / math.sqrt(len(bag) or 1), position))
    best = sorted(scored)[:SENTENCES_PER_REPLY]
    positions = sorted(p for _, p in best) if best else range(len(sentences))
    chosen = [sentences[p] for p in positions][:SENTENCES_PER_REPLY]
    if not chosen:  # only code (or only sentences pointing at nothing): its first block
        return [p for p in found if p.code][:1]
    return quoting.whole_thoughts(found, chosen)


def _first_lines(piece: quoting.Piece, fits: Any) -> quoting.Piece:
    """A code block cut to its first lines that fit, the last of them cut at a word if it
    must (the fence stays whole); a sentence as it is (cut at a word by the caller)."""
    if not piece.code:
        return piece
    text = piece.text
    while "\n" in text and not fits([replace(piece, text=text)]):
        text = text.rsplit("\n", 1)[0]
    while " " in text.strip() and not fits([replace(piece, text=text)]):
        text = text.rstrip().rsplit(" ", 1)[0]
    return replace(piece, text=text)


def _sentences(text: str) -> list[str]:
    return [p.text for p in _pieces(text) if not p.code]


def _whole(prefix: str, pieces: list[quoting.Piece], max_tokens: int) -> str:
    """Like maxTokens on Converse the reply stays within the bound, but by dropping whole
    sentences and code blocks from the end (never ending on a sentence whose block went);
    a first sentence alone over the bound is cut at a word."""

    def fits(kept: list[quoting.Piece]) -> bool:
        return tokens.count_tokens(prefix + quoting.render(kept)) <= max_tokens

    # Nothing fits whole: the first piece that can end a reply, cut to the bound.
    first = next((p for p in pieces if not quoting.dangling(p)), pieces[0])
    kept = quoting.within(pieces, fits) or [_first_lines(first, fits)]
    reply = prefix + quoting.render(kept)
    while tokens.count_tokens(reply) > max_tokens and " " in reply:
        reply = reply.rsplit(" ", 1)[0]
    return reply
