"""The two model seams: who answers, and who embeds the query.

``responder(settings)`` and ``query_embedder(settings)`` are the only places that choose
between Bedrock and the offline stand-ins, so tests and the local runtime patch exactly
these two functions. Handlers call them through the module (``models.responder(s)``) so a
patch is seen. numpy is only touched by query embedders, which only S4 uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..money.pricing import USAGE_KEYS
from ..runtime.settings import Settings

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "USAGE_KEYS", "GuardVerdict", "ModelReply", "QueryEmbedder", "Responder", "responder",
    "usage_of",
]  # fmt: skip


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


class Responder(Protocol):
    def converse(self, *, system: str, messages: list[dict[str, Any]]) -> ModelReply: ...

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        """Exact input tokens of this request; raises metering.CountUnavailable when the
        provider cannot count it (offline stand-ins never can)."""
        ...

    def guard(self, text: str) -> GuardVerdict:
        """Assess ``text`` (the current message) with the configured guardrail."""
        ...


class QueryEmbedder(Protocol):
    id: str

    def embed_query(self, text: str) -> tuple[np.ndarray, int]: ...


def responder(s: Settings) -> Responder:
    if s.model_backend == "offline":
        from .offline import ExtractiveResponder

        return ExtractiveResponder(s)
    from ..runtime import clients
    from . import bedrock

    return bedrock.BedrockResponder(s, clients.bedrock_runtime(), clients.bedrock_count())


def query_embedder(s: Settings) -> QueryEmbedder:
    if s.model_backend == "offline":
        from .offline import HashingQueryEmbedder

        return HashingQueryEmbedder(s)
    from ..runtime import clients
    from . import bedrock

    return bedrock.TitanEmbedder(s, clients.bedrock_runtime())


def usage_of(reply: ModelReply) -> dict[str, int]:
    """The four Converse usage counters, zero-filled (the shape S5 returns and S6 prices)."""
    return {key: int(reply.usage.get(key, 0)) for key in USAGE_KEYS}
