"""What every model implementation meets: the reply and verdict types, the two protocols,
Converse's usage counters. A leaf (stdlib only): bedrock.py, offline.py, models.py and
money/pricing.py import it, and it imports none of them, so no import circle can form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

# Converse's usage counters: what S5 returns and S6 (money/pricing.py) prices.
USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")


@dataclass(frozen=True, slots=True)
class ModelReply:
    text: str
    usage: dict[str, int] = field(default_factory=dict)  # keyed by USAGE_KEYS
    stop_reason: str = "end_turn"


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """The guardrail's verdict on the current message (ApplyGuardrail, source INPUT)."""

    blocked: bool
    text: str = ""  # the guardrail's own answer when it blocked the message
    units: int = 0  # the billed text units it reported (every policy)


class CountUnavailable(Exception):
    """CountTokens could not count this request (the meter falls back to the byte bound)."""


class CountNotOffered(CountUnavailable):
    """Counting is not offered for this model or Region (the catalogue, model_ids.py) or by
    the offline stand-in: by design, not a failure, so the meter stops asking."""


class Responder(Protocol):
    def converse(self, *, system: str, messages: list[dict[str, Any]]) -> ModelReply: ...

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        """Exact input tokens of this request; raises CountUnavailable when the provider
        cannot count it (offline stand-ins never can)."""
        ...

    def guard(self, text: str) -> GuardVerdict:
        """Assess ``text`` (the current message) with the configured guardrail."""
        ...


class QueryEmbedder(Protocol):
    id: str

    def embed_query(self, text: str) -> tuple[np.ndarray, int]: ...


def usage_of(reply: ModelReply) -> dict[str, int]:
    """The four Converse usage counters, zero-filled (the shape S5 returns and S6 prices)."""
    return {key: int(reply.usage.get(key, 0)) for key in USAGE_KEYS}
