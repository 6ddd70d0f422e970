"""Refuse to synthesize a Bedrock deployment around an index Retrieve cannot read.

The artifact in build/knowledge records the embedder that built it (``knowledge.json``:
``embedder.id`` and ``embedder.dimensions``). On AWS, Retrieve embeds each query with
``embedding_model_id`` at ``embedding_dimensions``; an index built by anything else makes
every message fail closed (a 503), so synthesis stops instead of deploying it.

The index must also be current: it records the site it was built from and a digest of
each page (indexer/provenance.py), and synthesis compares them with the site directory
the deployment names (cdk.json ``chatguard/index`` ``site_dir``, or ``-c
chatguard/site_dir=DIR``): another site, an edited, added or removed page, or an index
that records no site stops synthesis with the command that rebuilds it, so a deployment
never answers from (and links to) pages that are no longer the site's.

The offline sample index (hashing embedder) is still synthesized by the tests and by
``make synth-offline``: they say so explicitly with the context key ``STAND_IN_CONTEXT``,
and the synthesized app then carries a warning naming the stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from indexer.provenance import SiteRecord, drift
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.providers.local_embedder import DIMENSIONS as LOCAL_DIMENSIONS
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID

STAND_IN_CONTEXT = "chatguard/stand_in_index"
SITE_DIR_CONTEXT = "chatguard/site_dir"
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
    built: BuiltIndex,
    *,
    wanted: str | None,
    dimensions: int,
    stand_in_allowed: bool,
    site: str = "SITE_DIR",
) -> str | None:
    """None when the index fits; a warning when a stand-in was allowed; else IndexMismatch.

    `site` is the site directory as cdk.json names it, so the command runs as printed."""
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
    command = rebuild_command(wanted).replace("SITE_DIR", site)
    other = ""
    if wanted != LOCAL_MODEL_ID:  # a Titan deployment: the local model needs no Titan index
        other = (
            f', or deploy the local model instead: set "embedder": "local" in cdk.json\'s '
            f"chatguard block and rebuild it with `{REBUILD_LOCAL.replace('SITE_DIR', site)}`"
        )
    raise IndexMismatch(f"{problem}; rebuild it with `{command}`{other}")


def check_degraded(
    carried: tuple[str, ...],
    *,
    embedder: str,
    degraded_embedder: str,
    stand_in_allowed: bool,
    site: str = "SITE_DIR",
) -> tuple[str, str | None]:
    """How a Titan deployment's degraded answer (S7) ranks, from what the index carries:
    (the `degraded_embedder` S7 gets, a warning or None). With `degraded_embedder =
    "local"` the index must carry the local model's vectors (the indexer writes them
    beside Titan's): else IndexMismatch, or with a stand-in allowed S7 ranks by words
    alone and a warning says so. Beside the local embedder S7 uses the index's own."""
    if embedder != "titan" or degraded_embedder != "local" or LOCAL_MODEL_ID in carried:
        return degraded_embedder, None
    problem = (
        f"build/knowledge carries no {LOCAL_MODEL_ID!r} vectors for the degraded answer "
        '("degraded_embedder": "local" ranks it by meaning with no billed call)'
    )
    if stand_in_allowed:
        return "none", (
            f"{problem}: synthesized with the degraded answer ranked by words alone, "
            f"because {STAND_IN_CONTEXT} is set (not deployable)"
        )
    raise IndexMismatch(
        f"{problem}; rebuild it with `{REBUILD.replace('SITE_DIR', site)}` (it writes them "
        'beside Titan\'s), or set "degraded_embedder": "none" in cdk.json\'s chatguard block '
        "to rank the degraded answer by words alone"
    )


def rebuild_command(wanted: str | None) -> str:
    """The `chatguard index` command that builds what the deployment's Retrieve wants."""
    return REBUILD_LOCAL if wanted == LOCAL_MODEL_ID else REBUILD


def check_site(
    record: SiteRecord | None,
    site: Path,
    *,
    shown: str,
    stand_in_allowed: bool,
    command: str = REBUILD,
) -> str | None:
    """None when build/knowledge was built from `site` as it is now; a warning when a
    stand-in was allowed; else IndexMismatch naming what differs and the command.

    `shown` is how the site is named in the message (as cdk.json names it); `command` the
    rebuild for the deployment's embedder (`rebuild_command`)."""
    rebuild = f"rebuild it with `{command.replace('SITE_DIR', shown)}`"
    if not site.is_dir():
        problem = f"the site directory {shown} (cdk.json chatguard/index site_dir) does not exist"
    elif record is None:
        problem = "build/knowledge does not record which site it was built from"
    else:
        found = drift(record, site)
        if not found.belongs:
            problem = (
                f"build/knowledge was built from site {record.root!r}, not from {shown} "
                "(set cdk.json chatguard/index site_dir to the site you deploy)"
            )
        elif found.stale:
            problem = f"{shown} changed since build/knowledge was built ({found.summary()})"
        else:
            return None
    if stand_in_allowed:
        return f"{problem}: synthesized anyway because {STAND_IN_CONTEXT} is set (not deployable)"
    raise IndexMismatch(f"{problem}; {rebuild}")
