"""Offline stand-ins for Bedrock, for local runs and tests. Not models.

- ``ExtractiveResponder`` answers WITHOUT a language model: it reads the reference block
  of the prompt back, picks the sentences most similar to the question, and reports usage
  the way Converse does. Deterministic. Its usage is either the project's estimate
  (``tokens.count_tokens``) or, with ``offline_usage = "worst"``, the worst case a provider
  could bill for exactly what was sent: the byte bound of the input, ``maxTokens`` of
  output and every guardrail unit the reserve allows for. It cannot count tokens exactly
  (there is no CountTokens offline), so S5 meters it by the byte bound.
- ``HashingQueryEmbedder`` embeds the query with the indexer's feature-hashing embedder
  (the offline stand-in for Titan), so query and index vectors live in one space.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from . import pricing, tokens
from .byte_bound import message_texts, prompt_bound, text_bound
from .models import ModelReply
from .prompt import REFERENCE_SOURCE
from .settings import Settings

if TYPE_CHECKING:
    import numpy as np

OFFLINE_PREFIX = "Offline answer (extracted from this site, no language model): "
NO_MATCH = "I could not find anything about that on this site, so I would rather not guess."
SENTENCES_PER_REPLY = 3
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class ExtractiveResponder:
    """The offline stand-in for Converse: extracts, never generates."""

    def __init__(self, s: Settings) -> None:
        self._settings = s

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        from .metering import CountUnavailable

        raise CountUnavailable("the offline stand-in has no tokenizer to count with")

    def converse(
        self, *, system: str, messages: list[dict[str, Any]], guard_text: str | None
    ) -> ModelReply:
        s = self._settings
        question = _text_of(messages[-1]) if messages else ""
        picked = _best_sentences(_sentences(system), question)
        reply = OFFLINE_PREFIX + " ".join(picked) if picked else NO_MATCH
        reply = _cap(reply, s.max_output_tokens)
        if s.offline_usage == "worst":
            usage = _usage(prompt_bound(system, messages), s.max_output_tokens)
            return ModelReply(reply, usage, "end_turn", self._worst_guard_units(guard_text))
        prompt_tokens = tokens.count_tokens(system) + sum(
            tokens.count_tokens(_text_of(m)) for m in messages
        )
        usage = _usage(prompt_tokens, tokens.count_tokens(reply))
        return ModelReply(reply, usage, "end_turn", pricing.assessed_units(s, guard_text, reply))

    def _worst_guard_units(self, guard_text: str | None) -> int:
        if guard_text is None or not self._settings.guardrail_id:
            return 0
        return pricing.guardrail_unit_bound(self._settings, guard_text)


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


def _sentences(system: str) -> list[tuple[str, str]]:
    """(sentence, heading trail of its source) for every sentence of the reference block."""
    found = []
    for match in REFERENCE_SOURCE.finditer(system):
        text, heading = html.unescape(match.group("text")), html.unescape(match.group("heading"))
        found += [(s.strip(), heading) for s in _SENTENCE.split(text) if len(s.strip()) > 20]
    return found


def _stems(text: str) -> list[str]:
    # A crude suffix strip, enough for "limiting" to meet "limit" (the offline stand-in only).
    out = []
    for term in tokens.terms(text):
        for suffix in ("ing", "ed", "es", "s"):
            if term.endswith(suffix) and len(term) - len(suffix) >= 4:
                term = term[: -len(suffix)]
                break
        out.append(term)
    return out


def _best_sentences(sentences: list[tuple[str, str]], question: str) -> list[str]:
    """Top sentences by IDF-weighted overlap with the question (the source's heading counts
    half), a bonus for the question's word pairs, normalised by length; in document order."""
    wanted = _stems(question)
    pairs = set(itertools.pairwise(wanted))
    bags = [(_stems(sentence), set(_stems(heading))) for sentence, heading in sentences]
    df = Counter(t for bag, _ in bags for t in set(bag))
    weight = {t: math.log(1 + len(bags) / df[t]) if df[t] else 1.0 for t in set(wanted)}
    scored = []
    for position, (bag, heading) in enumerate(bags):
        score = sum(weight.get(t, 0.0) for t in set(bag))
        score += sum(weight[a] + weight[b] for a, b in pairs & set(itertools.pairwise(bag)))
        if score > 0:
            score += 0.5 * sum(weight[t] for t in heading & weight.keys())
            scored.append((-score / math.sqrt(len(bag) or 1), position, sentences[position][0]))
    best = sorted(scored)[:SENTENCES_PER_REPLY]
    return [sentence for _, _, sentence in sorted(best, key=lambda item: item[1])]


def _cap(reply: str, max_tokens: int) -> str:
    # Like maxTokens on Converse: the reply stops at the bound, whatever was picked.
    while tokens.count_tokens(reply) > max_tokens:
        reply = reply[: int(len(reply) * 0.9)]
    return reply
