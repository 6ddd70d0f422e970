"""Refuse to synthesize a Bedrock deployment around an index Retrieve cannot read.

The artifact in build/knowledge records the embedder that built it (``knowledge.json``:
``embedder.id`` and ``embedder.dimensions``). On AWS, Retrieve embeds each query with
``embedding_model_id`` at ``embedding_dimensions``; an index built by anything else makes
every message fail closed (a 503), so synthesis stops instead of deploying it.

The offline sample index (hashing embedder) is still synthesized by the tests and by
``make synth-offline``: they say so explicitly with the context key ``STAND_IN_CONTEXT``,
and the synthesized app then carries a warning naming the stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass

from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.providers.local_embedder import DIMENSIONS as LOCAL_DIMENSIONS
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID

STAND_IN_CONTEXT = "chatguard/stand_in_index"
REBUILD = "chatguard index SITE_DIR --out build/knowledge --embedder titan"
REBUILD_LOCAL = "chatguard index SITE_DIR --out build/knowledge"  # embedder = "local"


class IndexMismatch(ValueError):
    """The bundled index was not embedded the way the deployed Retrieve step embeds."""


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    embedder: str
    dimensions: int


def wanted_embedder(
    model_backend: str, model_id: str, dimensions: int, embedder: str = "titan"
) -> str | None:
    """The embedder id a deployment's Retrieve uses; None when it embeds offline."""
    if model_backend != "bedrock":
        return None
    if embedder == "local":
        return LOCAL_MODEL_ID
    return bedrock_embedder_id(model_id, dimensions)


def wanted_dimensions(dimensions: int, embedder: str) -> int:
    return LOCAL_DIMENSIONS if embedder == "local" else dimensions


def check(
    built: BuiltIndex, *, wanted: str | None, dimensions: int, stand_in_allowed: bool
) -> str | None:
    """None when the index fits; a warning when a stand-in was allowed; else IndexMismatch."""
    if wanted is None:
        return None
    if built.embedder == wanted and built.dimensions == dimensions:
        return None
    problem = (
        f"build/knowledge was embedded by {built.embedder!r} ({built.dimensions} dimensions) "
        f"but Retrieve embeds queries with {wanted!r} ({dimensions} dimensions)"
    )
    if stand_in_allowed:
        return f"{problem}: synthesized anyway because {STAND_IN_CONTEXT} is set (not deployable)"
    rebuild = REBUILD_LOCAL if wanted == LOCAL_MODEL_ID else REBUILD
    raise IndexMismatch(f"{problem}; rebuild it with `{rebuild}`")
