"""Checks `serve`, `chat` and `demo` run before they start anything, each a pure function
answering one line for the user (or None when all is well).

A missing or incompatible index would otherwise surface as a 503 on every message; a
site directory that is not one would serve an empty site; an index built from another
site would answer from that site's pages, with source links that lead nowhere.
"""

from __future__ import annotations

import os
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
    """The `chatguard index` command that builds what `settings` need at `knowledge`, for
    the site served (`site_dir`: a command runs as printed, no placeholder)."""
    from steps.lib.providers.models import embedder_kind

    kind = embedder_kind(settings)
    embedder = "" if kind == "local" else f" --embedder {kind}"
    where = f" --region {region}" if region and kind == "titan" else ""
    return f"chatguard index {_shown(site_dir(site))} --out {knowledge}{embedder}{where}"


def beside(site: Path) -> Path:
    """Where an index of `site` goes when the one named must not be overwritten: under
    build/, never inside a site folder (whatever is there gets published with the site)."""
    return Path("build") / f"{site.resolve().name}-knowledge"


def inside_site(knowledge: Path, site: Path | None) -> bool:
    """Is the index folder the site folder, or in it? `chat --site S --knowledge S`."""
    served = site_dir(site).resolve()
    return knowledge.resolve().is_relative_to(served)


def knowledge_problem(
    settings: Settings, site: Path | None = None, region: str | None = None
) -> str | None:
    """Why the index at settings.knowledge_dir cannot answer, with the command that fixes it."""
    from steps.lib.grounding.knowledge import load_knowledge

    directory = Path(settings.knowledge_dir)
    if inside_site(directory, site):
        own = beside(site_dir(site))
        return (
            f"{_shown(directory)} is in the site folder {_shown(site_dir(site))}, whose files "
            f"get published, not an index: build the index beside it with "
            f"`{index_command(own, site, settings, region)}` and pass `--knowledge {own}`"
        )
    try:
        kb = load_knowledge(directory, embedder=embedder_id(settings))
        if kb.dimensions != embedder_dimensions(settings):
            raise KnowledgeError(
                f"built with {kb.dimensions} dimensions, this runtime embeds queries with "
                f"{embedder_dimensions(settings)}: rebuild the index"
            )
        from steps.lib.providers.degraded_embedder import reads_second_matrix

        if reads_second_matrix(settings):  # beside Titan: S7's own vectors
            from steps.lib.providers.local_embedder import MODEL_ID

            load_knowledge(directory, embedder=MODEL_ID)
    except KnowledgeError as exc:
        reason = str(exc).split(": run `chatguard index", 1)[0]
        return (
            f"no usable index at {directory} ({reason}); build it with: "
            f"{index_command(directory, site, settings, region)}"
        )
    return None


ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SITE_DIR = ROOT / "examples" / "site"
SITE_DIR_ENV = "CHATGUARD_SITE_DIR"


def site_dir(site: Path | None = None) -> Path:
    """The site a command serves: `--site`, else CHATGUARD_SITE_DIR, else the sample."""
    return site or Path(os.environ.get(SITE_DIR_ENV) or DEFAULT_SITE_DIR)


def pairing_problem(
    settings: Settings, site: Path | None, region: str | None = None, *, chosen: bool = True
) -> tuple[str | None, str | None]:
    """(refusal, warning) for the index at settings.knowledge_dir and the site: refused
    when the index was built from another site (or does not say which), a warning when
    the site's pages changed since the build; each with the `chatguard index` command.

    `chosen` is False when the index is the default one, not one the user named: the
    fix is then a new index for this site beside it, not an overwrite of the default.
    A named index beside the default site (no `--site`) most likely wants its own site:
    the line says so first."""
    from indexer.policy import IndexPolicy
    from indexer.provenance import drift, read_record

    knowledge, served = Path(settings.knowledge_dir), site_dir(site)
    where = _shown(served)
    rebuild = f"rebuild it with `{index_command(_shown(knowledge), where, settings, region)}`"
    try:
        record = read_record(knowledge)
    except ValueError as exc:
        return f"the index at {_shown(knowledge)} is unusable ({exc}): {rebuild}", None
    if record is None:
        return (
            f"the index at {_shown(knowledge)} does not record which site it was built "
            f"from (an older chatguard built it): {rebuild}"
        ), None
    if record.permalinks != IndexPolicy.from_context().permalinks:
        rebuild = rebuild[:-1] + f" --permalinks {record.permalinks}`"
    found = drift(record, served)
    if not found.belongs:
        own = beside(served)
        if site is not None and chosen and own.resolve() == knowledge.resolve():
            fix = rebuild  # the index is already named for this site: rebuilding it is safe
        elif chosen and site is None:
            # The index the user named is kept: it is another site's, not a mistake.
            fix = f"add `--site DIR`, the folder {record.root!r} it was built from"
        else:
            fix = (
                f"build one beside it with `{index_command(own, site, settings, region)}` "
                f"and add `--knowledge {own}`"
            )
        return (
            f"the index at {_shown(knowledge)} was built from site {record.root!r} "
            f"({_pages(found.built_from)}), not from {where} ({_pages(found.shared)} in "
            f"common): {fix}"
        ), None
    if found.stale:
        return None, (
            f"warning: {where} changed since the index at {_shown(knowledge)} was built "
            f"({found.summary()}); answers and source links may be out of date: {rebuild}"
        )
    return None, None


def index_permalinks(settings: Settings) -> str | None:
    """The permalink setting the index was built with (its links), None if unrecorded."""
    from indexer.provenance import read_record

    try:
        record = read_record(Path(settings.knowledge_dir))
    except ValueError:
        return None
    return record.permalinks if record else None


def _pages(n: int) -> str:
    return f"{n} page" if n == 1 else f"{n} pages"


def _shown(path: Path) -> Path:
    """The path as the user would type it: relative when under the working directory."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def site_problem(site: Path) -> str | None:
    if not site.exists():
        return f"site directory {site} does not exist"
    if not site.is_dir():
        return f"site directory {site} is not a directory"
    return None
