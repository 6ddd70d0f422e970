"""The two model seams: who answers, and who embeds the query.

``responder(settings)`` and ``query_embedder(settings)`` are the only places that choose
between Bedrock and the offline stand-ins, so tests and the local runtime patch exactly
these two functions, or hand them a client (a botocore Stubber, a fake) to build Bedrock's
adapters on instead of the container's. Handlers call them through the module
(``models.responder(s)``) so a patch is seen. numpy is only touched by query embedders,
which only S4 uses. The types every implementation meets live in interface.py (a leaf).
"""

from __future__ import annotations

from typing import Any

from ..runtime.settings import Settings
from .embedder_choice import embedder_kind
from .interface import (
    USAGE_KEYS,
    CountNotOffered,
    CountUnavailable,
    GuardVerdict,
    ModelReply,
    QueryEmbedder,
    Responder,
    usage_of,
)

# The interface's names, for the modules that reach the models through this seam.
__all__ = [
    "USAGE_KEYS", "CountNotOffered", "CountUnavailable", "GuardVerdict", "ModelReply",
    "QueryEmbedder", "Responder", "embedder_kind", "query_embedder", "query_embedder_id",
    "responder", "usage_of",
]  # fmt: skip


def responder(
    s: Settings, client: Any = None, count_client: Any = None, guard_client: Any = None
) -> Responder:
    """Converse on ``client``, CountTokens on ``count_client`` and ApplyGuardrail on
    ``guard_client`` (by default the container's own client for each call, with its own
    timeouts; a ``client`` passed alone serves all three), or the offline stand-in, which
    takes no client."""
    if s.model_backend == "offline":
        from .offline import ExtractiveResponder

        return ExtractiveResponder(s)
    from ..runtime import clients
    from . import bedrock

    if client is None:
        client = clients.bedrock_runtime()
        count_client = count_client or clients.bedrock_count()
        guard_client = guard_client or clients.bedrock_guard()
    return bedrock.BedrockResponder(s, client, count_client, guard_client)


def query_embedder_id(s: Settings) -> str:
    """The id an index must carry for these settings, without loading any model."""
    kind = embedder_kind(s)
    if kind == "hashing":
        from .hashing_embedder import HashingEmbedder

        return HashingEmbedder.id
    if kind == "local":
        from .local_embedder import MODEL_ID

        return MODEL_ID
    from ..grounding.knowledge import bedrock_embedder_id

    return bedrock_embedder_id(s.embedding_model_id, s.embedding_dimensions)


def query_embedder(s: Settings, client: Any = None) -> QueryEmbedder:
    """Titan on ``client`` (default: the container's own), the local model, or the
    hashing stand-in, as ``embedder_kind`` says."""
    kind = embedder_kind(s)
    if kind == "hashing":
        from .offline import HashingQueryEmbedder

        return HashingQueryEmbedder(s)
    if kind == "local":
        from .local_embedder import LocalQueryEmbedder

        return LocalQueryEmbedder()
    from ..runtime import clients
    from . import bedrock

    return bedrock.TitanEmbedder(s, client or clients.bedrock_embed())
