"""The build: site directory -> pages -> chunks -> policy check -> embeddings -> artifact."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

import numpy as np

from steps.lib.grounding.knowledge import Chunk, chunk_document, normalise_page

from .artifact import Degraded, write_artifact
from .chunking import chunk_page
from .pages import Page, parse_page
from .policy import IndexPolicy, Violation, violations
from .provenance import page_files, record_site
from .utility import utility_kind


class Embedder(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class BuildError(Exception):
    """The build refused to write an artifact; the message says why."""


class ForbiddenContent(BuildError):
    """A forbidden term where a page would be indexed: each hit (page, heading, term),
    then the two ways on: edit the page, or change the list (the terms are the site
    owner's own codenames, so a hit is either a leak or a list that does not fit)."""

    def __init__(self, found: Sequence[Violation]) -> None:
        self.violations = tuple(found)
        lines = "\n".join(f"  {v}" for v in found)
        super().__init__(
            f"forbidden terms in {len(found)} place(s) to be indexed:\n{lines}\n"
            "To go on, either edit those pages (or leave them out with `--exclude GLOB` or "
            'cdk.json "chatguard/index" "exclude"), or change the list: `--forbidden TERM` '
            '(repeatable, replaces the list for this run) or cdk.json "chatguard/index" '
            '"forbidden_terms".'
        )


@dataclass(frozen=True, slots=True)
class BuildReport:
    pages: int
    excluded: tuple[str, ...]
    chunks: int
    tokens: int
    embedder: str
    dimensions: int
    out: Path
    empty: tuple[str, ...] = ()  # page files with no text to index (skipped)
    utility: tuple[str, ...] = ()  # a generator's utility pages left out (in `excluded` too)
    degraded_embedder: str | None = None  # the degraded answer's own vectors, when written


def collect(site: Path, policy: IndexPolicy) -> tuple[list[Page], list[str]]:
    """Every page file under `site` (sorted, so builds are reproducible) minus exclusions:
    the policy's globs and, unless it keeps them, a generator's utility pages."""
    if not site.is_dir():
        raise BuildError(f"site directory not found: {site}")
    pages: list[Page] = []
    excluded: list[str] = []
    owners: dict[str, str] = {}
    for relative, path in page_files(site):
        if policy.excluded(relative):
            excluded.append(relative)
            continue
        try:
            content = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise BuildError(f"{relative} is not UTF-8 text ({exc.reason})") from exc
        if not policy.keep_utility_pages and utility_kind(relative, content):
            excluded.append(relative)  # build() reports these apart: utility_pages()
            continue
        page = parse_page(relative, content, policy.permalinks)
        # One page per path as a visitor's browser names it (`/a`, `/a.html`, `/a.htm`):
        # retrieval finds the current page's chunks by that form.
        key = normalise_page(page.path)
        if key in owners:
            raise BuildError(f"{owners[key]} and {relative} both map to page {key}")
        owners[key] = relative
        pages.append(page)
    return pages, excluded


def plan(site: Path, policy: IndexPolicy) -> tuple[list[tuple[str, Chunk]], list[str]]:
    """The chunks that would be indexed, with their source file; fails on forbidden terms."""
    pages, excluded = collect(site, policy)
    source_chunks = [(page.source, chunk) for page in pages for chunk in chunk_page(page)]
    source_chunks = resolve_links(pages, source_chunks)
    if not source_chunks:
        raise BuildError(f"no indexable Markdown or HTML pages under {site}")
    found = violations(source_chunks, policy.forbidden_terms)
    if found:
        raise ForbiddenContent(found)
    return source_chunks, excluded


def resolve_links(
    pages: Sequence[Page], source_chunks: Sequence[tuple[str, Chunk]]
) -> list[tuple[str, Chunk]]:
    """Each chunk's links as "page#anchor" of another indexed page, an anchor that page
    has (never one it lacks: a link must land); links elsewhere (another site, a page left
    out, the page itself, no anchor) are dropped. degraded_choice follows them."""
    indexed = {source for source, _ in source_chunks}
    by_source = {page.source: page for page in pages if page.source in indexed}
    out: list[tuple[str, Chunk]] = []
    for source, chunk in source_chunks:
        kept: dict[tuple[str, str], None] = {}
        for href, text in chunk.links:
            target, _, anchor = href.partition("#")
            if not anchor or urlsplit(target).scheme or target.startswith("/"):
                continue  # another site, a root-relative path, or no section named
            relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
            page = by_source.get(unquote(relative))
            if page is not None and page.source != source and unquote(anchor) in page.ids:
                kept[(f"{page.path}#{unquote(anchor)}", text)] = None
        out.append((source, replace(chunk, links=tuple(kept))))
    return out


def build(
    site: Path,
    out: Path,
    policy: IndexPolicy,
    embedder: Embedder,
    degraded_embedder: Embedder | None = None,
) -> BuildReport:
    """Check everything first, then embed, then write: a refusal writes nothing.

    `degraded_embedder` (a free one: the local model) embeds the same chunks a second
    time, for the degraded answer, when `embedder` is one S7 may not call (Titan)."""
    source_chunks, excluded = plan(site, policy)
    site_record = record_site(site, policy)  # what the index was built from
    chunks = [chunk for _, chunk in source_chunks]
    documents = [chunk_document(chunk) for chunk in chunks]
    matrix = _embedded(embedder, documents)
    degraded = None
    if degraded_embedder is not None and degraded_embedder.id != embedder.id:
        degraded = Degraded(_embedded(degraded_embedder, documents), degraded_embedder.id)
    write_artifact(out, chunks, matrix, embedder.id, site=site_record.as_json(), degraded=degraded)
    indexed = {source for source, _ in source_chunks}
    pages, _ = collect(site, policy)
    return BuildReport(
        pages=len(indexed),
        excluded=tuple(excluded),
        chunks=len(chunks),
        tokens=sum(chunk.tokens for chunk in chunks),
        embedder=embedder.id,
        dimensions=embedder.dimensions,
        out=out,
        empty=tuple(page.source for page in pages if page.source not in indexed),
        utility=utility_pages(excluded, policy),
        degraded_embedder=degraded.embedder if degraded else None,
    )


def _embedded(embedder: Embedder, documents: Sequence[str]) -> np.ndarray:
    matrix = embedder.embed(documents)
    if matrix.shape != (len(documents), embedder.dimensions):
        raise BuildError(f"embedder returned {matrix.shape}, expected {len(documents)} rows")
    return matrix


def utility_pages(excluded: Sequence[str], policy: IndexPolicy) -> tuple[str, ...]:
    """The pages collect() left out as utility pages: those no exclusion glob names."""
    return tuple(relative for relative in excluded if not policy.excluded(relative))
