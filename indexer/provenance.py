"""What an index was built from, and whether a site still matches it.

`chatguard index` records in knowledge.json's header (key ``site``) the site directory's
name (never a path of the machine that built it), the exclusion globs and permalink
setting of the build, and every page file it read with a digest of its text, plus one
fingerprint over them all.

A page's digest is of what the index makes of it (`text_digest`: its chunks' ids, headings
and text), not of its bytes: a change a reader cannot see (the widget's embed snippet
added to every page, a theme's new stylesheet link, re-wrapped markup) leaves the index
current; a change of words, headings, anchors or of what the text links to (the index
keeps each section's links for the degraded answer's "also see") makes it stale. Records
written before (``"digests"`` absent) hold byte digests and are compared by bytes; those
written before links were digested (``"text"``) are compared by text alone: an index
built then still loads and answers (it has no links, so "also see" does not follow them,
as before) and is not called stale for it; rebuilding it records the links.

The runtime in Lambda never reads the record; the commands that pair an index with a
site do:

- `serve`, `chat` and `demo` refuse a site that is not the one the index was built from
  (`belongs`) and warn when its pages changed since (`Drift`), each with the exact
  `chatguard index` command (local/commands/preflight.py);
- `make synth` / `make deploy` refuse a stale index (infra/index_check.py).

"Belongs" is a majority rule on page files, not the folder's name, so a site that was
moved or renamed still pairs with its index: more than half of the pages the index was
built from are still in the site. Any difference in the pages' text (edited, added,
removed) makes the index stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .chunking import chunk_page
from .pages import PAGE_SUFFIXES, parse_page
from .policy import IndexPolicy

SITE_KEY = "site"
_DIGEST_HEX = 16  # 64 bits of SHA-256: tells an edited page from the built one
# What a record's page digests are of: TEXT_LINKS now; TEXT and BYTES in older records.
TEXT_LINKS, TEXT, BYTES = "text+links", "text", "bytes"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:_DIGEST_HEX]


def text_digest(relative: str, data: bytes, permalinks: str = "file", *, links: bool = True) -> str:
    """The digest of a page's text as the index holds it: each chunk's id (page link and
    anchor), heading trail and text, and (`links`) the links of its text as written. A
    file that is not UTF-8 (the build refuses it) is digested by its bytes."""
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return digest(data)
    chunks = chunk_page(parse_page(relative, content, permalinks))
    lines = "".join(
        f"{c.id}\0{c.heading}\0{c.text}\n"
        + ("".join(f"\0{href}\0{text}\n" for href, text in c.links) if links else "")
        for c in chunks
    )
    return digest(lines.encode("utf-8"))


def page_files(site: Path) -> Iterator[tuple[str, Path]]:
    """(relative POSIX path, file) of every page file under `site`, sorted; hidden files
    and folders skipped. Exclusions are the caller's: the build lists what it excluded."""
    for path in sorted(site.rglob("*")):
        inside = path.relative_to(site)
        hidden = any(part.startswith(".") for part in inside.parts)
        if not hidden and path.is_file() and inside.as_posix().lower().endswith(PAGE_SUFFIXES):
            yield inside.as_posix(), path


@dataclass(frozen=True, slots=True)
class SiteRecord:
    root: str  # the site directory's name, e.g. "site" for examples/site
    pages: Mapping[str, str]  # page file (relative POSIX path) -> digest of its text
    exclude: tuple[str, ...]
    permalinks: str
    digests: str = TEXT_LINKS  # TEXT or BYTES in a record written before

    @property
    def fingerprint(self) -> str:
        lines = "".join(f"{source}\0{self.pages[source]}\n" for source in sorted(self.pages))
        return digest(lines.encode("utf-8"))

    def as_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "fingerprint": self.fingerprint,
            "exclude": list(self.exclude),
            "permalinks": self.permalinks,
            "digests": self.digests,
            "pages": dict(sorted(self.pages.items())),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SiteRecord:
        """Raises ValueError for a record this version cannot read."""
        try:
            pages = {str(k): str(v) for k, v in dict(raw["pages"]).items()}
            record = cls(
                str(raw["root"]),
                pages,
                tuple(map(str, raw["exclude"])),
                str(raw["permalinks"]),
                str(raw.get("digests", BYTES)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"its site record is unreadable ({exc})") from exc
        if record.fingerprint != raw.get("fingerprint"):
            raise ValueError("its site record does not match its fingerprint")
        if record.digests not in (TEXT_LINKS, TEXT, BYTES):
            raise ValueError(f"its site record's digests are of {record.digests!r}")
        return record


def record_site(site: Path, policy: IndexPolicy, *, digests: str = TEXT_LINKS) -> SiteRecord:
    """The record of `site` as `policy` reads it: every page file not excluded, each
    digested by its text and links (or as an older record was, to compare with it)."""
    pages = {
        relative: (
            digest(path.read_bytes())
            if digests == BYTES
            else text_digest(
                relative, path.read_bytes(), policy.permalinks, links=digests == TEXT_LINKS
            )
        )
        for relative, path in page_files(site)
        if not policy.excluded(relative)
    }
    name = site.resolve().name or "site"
    return SiteRecord(name, pages, policy.exclude, policy.permalinks, digests)


def read_record(knowledge: Path) -> SiteRecord | None:
    """The site record in `knowledge`/knowledge.json; None when the index has none (built
    before indexes recorded their site). Raises ValueError for an unreadable one."""
    try:
        metadata = json.loads((knowledge / "knowledge.json").read_bytes())
    except (OSError, ValueError) as exc:
        raise ValueError(f"knowledge.json is unreadable ({exc})") from exc
    raw = metadata.get(SITE_KEY) if isinstance(metadata, dict) else None
    return None if raw is None else SiteRecord.from_json(raw)


@dataclass(frozen=True, slots=True)
class Drift:
    """How `site` differs from the record an index keeps of the site it was built from."""

    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    shared: int  # page files in both, changed or not
    built_from: int  # page files the index was built from

    @property
    def stale(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    @property
    def belongs(self) -> bool:
        return 2 * self.shared > self.built_from

    def summary(self, limit: int = 3) -> str:
        """'2 changed (a.md, b.md), 1 added (c.md)': what a warning names."""
        parts = []
        for what, names in (("changed", self.changed), ("added", self.added),
                            ("removed", self.removed)):  # fmt: skip
            if names:
                shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
                parts.append(f"{len(names)} {what} ({shown})")
        return ", ".join(parts)


def drift(record: SiteRecord, site: Path) -> Drift:
    """Compare `site` now with `record`, reading it with the build's own exclusions."""
    policy = IndexPolicy(record.exclude, (), record.permalinks)
    now = record_site(site, policy, digests=record.digests).pages
    shared = record.pages.keys() & now.keys()
    return Drift(
        changed=tuple(sorted(s for s in shared if record.pages[s] != now[s])),
        added=tuple(sorted(now.keys() - record.pages.keys())),
        removed=tuple(sorted(record.pages.keys() - now.keys())),
        shared=len(shared),
        built_from=len(record.pages),
    )
