"""Checks `serve`, `chat` and `demo` run before they start anything, each a pure function
answering one line for the user (or None when all is well).

A missing or incompatible index would otherwise surface as a 503 on every message; a
site directory that is not one would serve an empty site.
"""

from __future__ import annotations

from pathlib import Path

from steps.lib.runtime.errors import KnowledgeError
from steps.lib.runtime.settings import Settings


def embedder_id(settings: Settings) -> str:
    """The id of the query embedder the settings choose, without loading it."""
    from steps.lib.providers.models import query_embedder_id

    return query_embedder_id(settings)


def embedder_dimensions(settings: Settings) -> int:
    from steps.lib.providers.models import embedder_kind

    if embedder_kind(settings) == "local":
        from steps.lib.providers.local_embedder import DIMENSIONS

        return DIMENSIONS
    return settings.embedding_dimensions


def index_command(
    knowledge: Path, site: Path | None, settings: Settings, region: str | None = None
) -> str:
    """The `chatguard index` command that builds what `settings` need at `knowledge`."""
    from steps.lib.providers.models import embedder_kind

    kind = embedder_kind(settings)
    embedder = "" if kind == "local" else f" --embedder {kind}"
    where = f" --region {region}" if region and kind == "titan" else ""
    return f"chatguard index {site or 'SITE_DIR'} --out {knowledge}{embedder}{where}"


def knowledge_problem(
    settings: Settings, site: Path | None = None, region: str | None = None
) -> str | None:
    """Why the index at settings.knowledge_dir cannot answer, with the command that fixes it."""
    from steps.lib.grounding.knowledge import load_knowledge

    directory = Path(settings.knowledge_dir)
    try:
        kb = load_knowledge(directory, embedder=embedder_id(settings))
        if kb.dimensions != embedder_dimensions(settings):
            raise KnowledgeError(
                f"built with {kb.dimensions} dimensions, this runtime embeds queries with "
                f"{embedder_dimensions(settings)}: rebuild the index"
            )
    except KnowledgeError as exc:
        reason = str(exc).split(": run `chatguard index", 1)[0]
        return (
            f"no usable index at {directory} ({reason}); build it with: "
            f"{index_command(directory, site, settings, region)}"
        )
    return None


def site_problem(site: Path) -> str | None:
    if not site.exists():
        return f"site directory {site} does not exist"
    if not site.is_dir():
        return f"site directory {site} is not a directory"
    return None
