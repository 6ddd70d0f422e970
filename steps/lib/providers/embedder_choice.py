"""Which embedder the settings choose (a leaf: settings only, so S7 can ask without
importing the model seams and their Bedrock clients)."""

from __future__ import annotations

from typing import Literal

from ..runtime.settings import Settings

EmbedderKind = Literal["titan", "local", "hashing"]


def embedder_kind(s: Settings) -> EmbedderKind:
    """ "hashing" only when asked for (unit tests); "local" when asked for or on the offline
    backend (which never calls Bedrock); else "titan"."""
    if s.embedder == "hashing":
        return "hashing"
    return "local" if s.embedder == "local" or s.model_backend == "offline" else "titan"
