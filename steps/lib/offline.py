"""Offline stand-ins for Bedrock, for local runs and tests. Not models.

- ``ExtractiveResponder`` answers WITHOUT a language model: it reads the reference block
  of the prompt back, picks the sentences most similar to the question, and reports usage
  the way Converse does, with token counts from ``tokens.count_tokens``. Deterministic.
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

from . import tokens
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

    def converse(
        self, *, system: str, messages: list[dict[str, Any]], guard_text: str | None
    ) -> ModelReply:
        question = _text_of(messages[-1]) if messages else ""
        picked = _best_sentences(_sentences(system), question)
        reply = OFFLINE_PREFIX + " ".join(picked) if picked else NO_MATCH
        reply = _cap(reply, self._settings.max_output_tokens)
        prompt_tokens = tokens.count_tokens(system) + sum(
            tokens.count_tokens(_text_of(m)) for m in messages
        )
        usage = {
            "inputTokens": prompt_tokens,
            "outputTokens": tokens.count_tokens(reply),
            "cacheReadInputTokens": 0,
            "cacheWriteInputTokens": 0,
        }
        return ModelReply(reply, usage, "end_turn", self._guard_units(guard_text, reply))

    def _guard_units(self, guard_text: str | None, reply: str) -> int:
        if guard_text is None or not self._settings.guardrail_id:
            return 0
        units = math.ceil(len(guard_text) / 1000) + math.ceil(len(reply) / 1000)
        return units * self._settings.guardrail_policy_count


class HashingQueryEmbedder:
    """The offline stand-in for Titan: the index's own hashing embedder, one query at a time."""

    def __init__(self, s: Settings) -> None:
        from .hashing_embedder import HashingEmbedder

        self._embedder = HashingEmbedder(s.embedding_dimensions)
        self.id: str = self._embedder.id

    def embed_query(self, text: str) -> tuple[np.ndarray, int]:
        return self._embedder.embed([text])[0], tokens.count_tokens(text)


def _text_of(message: dict[str, Any]) -> str:
    parts = []
    for block in message.get("content", []):
        if "text" in block:
            parts.append(block["text"])
        elif "guardContent" in block:
            parts.append(block["guardContent"]["text"]["text"])
    return "\n".join(parts)


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
