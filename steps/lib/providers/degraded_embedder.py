"""Whether the degraded answer (S7) embeds with the local model: its own leaf, so only S7
reads `degraded_embedder` (Retrieve and Invoke import embedder_choice, not this)."""

from __future__ import annotations

from typing import Literal

from ..runtime.settings import Settings
from .embedder_choice import embedder_kind


def degraded_embedder_kind(s: Settings) -> Literal["local"] | None:
    """Whether the degraded answer (S7, no billed call) embeds the query with the local
    model: beside the local embedder always; beside Titan when the deployment carries the
    local model's vectors for it (`degraded_embedder`); else None (words alone)."""
    kind = embedder_kind(s)
    if kind == "local" or (kind == "titan" and s.degraded_embedder == "local"):
        return "local"
    return None


def reads_second_matrix(s: Settings) -> bool:
    """Whether S7 ranks with the local model beside another embedder: then the index must
    carry the local model's vectors as its second matrix (knowledge.py)."""
    return degraded_embedder_kind(s) == "local" and embedder_kind(s) != "local"
