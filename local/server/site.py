"""The demo site of `chatguard serve`: the sample site's pages with the chat widget on each.

`handle_get(path)` answers the local server's GET requests that are not the chat API:

- a built site (HTML pages, no Markdown: a generator's output) is served as itself, its
  own CSS, scripts and images with the widget added to each page (site_files.py);
- otherwise the pages of the site directory (``examples/site`` unless
  ``CHATGUARD_SITE_DIR`` names another), read by the indexer's own reader with its
  exclusions (a page the index leaves out is not served either), rendered to simple HTML
  with a nav between pages, at the links the indexer gives them (``posts/waf.md`` ->
  ``/posts/waf.html``, or ``/posts/waf`` with pretty permalinks; the home page at ``/``
  too), so the widget's ``page`` grounding can be tried by moving between pages;
- ``/widget/chatguard.js`` and ``/widget/chatguard.css``, the embeddable widget itself.

Page content is the site owner's text, but it is still treated as untrusted: Markdown is
rendered with raw HTML disabled (so ``<script>`` in a page shows as text), link targets are
filtered by markdown-it's URL validator, and every value put into the page template is
escaped. URLs are looked up in a table built from the directory listing, never joined onto
a filesystem path, so no request can name a file outside the site.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath

from markdown_it import MarkdownIt
from markdown_it.token import Token

from indexer.build import collect
from indexer.pages import PAGE_SUFFIXES, Block, page_path
from indexer.policy import IndexPolicy
from local.commands import preflight
from steps.lib.grounding.knowledge import normalise_page

from . import site_files

ROOT = Path(__file__).resolve().parents[2]
WIDGET_DIR = ROOT / "widget"
DEFAULT_SITE_DIR = preflight.DEFAULT_SITE_DIR
SITE_DIR_ENV = preflight.SITE_DIR_ENV

HTML = "text/html; charset=utf-8"
Response = tuple[int, str, bytes]

_ASSETS = {
    "/widget/chatguard.js": ("chatguard.js", "text/javascript; charset=utf-8"),
    "/widget/chatguard.css": ("chatguard.css", "text/css; charset=utf-8"),
}
# A meta CSP: the demo proves the widget needs no inline script or style, and a page's
# content could not run script even if the renderer let markup through.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True, slots=True)
class Page:
    path: str  # the URL path, e.g. "/posts/waf"
    source: str  # the file, relative to the site directory, e.g. "posts/waf.md"
    title: str
    body: str  # rendered, safe HTML of the page content


def slug(text: str) -> str:
    """Heading anchor; the widget builds source links with the same rule."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def handle_get(
    path: str, directory: Path | None = None, permalinks: str | None = None
) -> Response | None:
    """(status, content type, body) for a GET of `path` on the site in `directory` (default
    `site_dir()`), its pages at their links by `permalinks` (default: cdk.json's, as the
    indexer links them); None when nothing lives there.

    A page answers at its link only, as a static host serves it (`/posts/waf.html` with
    "file" links, `/posts/waf` with "pretty" ones), so a link that would be a 404 on the
    real host is one here too; `/` is the home page, as a host's index document."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    if path in _ASSETS:
        name, kind = _ASSETS[path]
        return 200, kind, (WIDGET_DIR / name).read_bytes()
    if path == "/_site/site.css":
        return 200, "text/css; charset=utf-8", SITE_CSS.encode()
    files = site_files.file_table(directory or site_dir())
    if site_files.is_built_site(files):  # a generator's output: its own files, as they are
        links = permalinks or IndexPolicy.from_context().permalinks
        return site_files.handle_file(path, files, links)
    pages = load_site(directory or site_dir(), permalinks)
    page = pages.get(path) or (_home(pages) if path == "/" else None)
    if page is None:
        return None
    return 200, HTML, render_document(page, pages).encode()


def site_dir() -> Path:
    return preflight.site_dir()


def load_site(directory: Path, permalinks: str | None = None) -> dict[str, Page]:
    """Every page the indexer would index, by its link; re-read only when a file changes."""
    if not directory.is_dir():
        return {}
    files = sorted(directory.rglob("*"))
    signature = tuple((str(f), f.stat().st_mtime_ns) for f in files)
    return _load(directory, permalinks, signature)


@lru_cache(maxsize=4)  # one entry per edit of the site: keep only the latest few
def _load(
    directory: Path, permalinks: str | None, signature: tuple[tuple[str, int], ...]
) -> dict[str, Page]:
    del signature  # only part of the cache key
    policy = IndexPolicy.from_context()
    if permalinks:
        policy = replace(policy, permalinks=permalinks)
    parsed, _excluded = collect(directory, policy)
    pages = [
        Page(p.path, p.source, p.title, render_blocks(p.blocks, p.source, policy.permalinks))
        for p in parsed
    ]
    return {page.path: page for page in pages}


def render_blocks(blocks: tuple[Block, ...], source: str, permalinks: str = "file") -> str:
    """Safe HTML of a page as the indexer read it (headings and Markdown text blocks)."""
    text = "\n\n".join(("#" * b.level + " " + b.text) if b.level else b.text for b in blocks)
    tokens = _MD.parse(text)
    _add_heading_ids(tokens)
    _rewrite_links(tokens, source, permalinks)
    return str(_MD.renderer.render(tokens, _MD.options, {}))


def _home(pages: dict[str, Page]) -> Page:
    """The page at `/`: the site's index page, else the list of its pages."""
    return next((p for p in pages.values() if normalise_page(p.path) == "/"), None) or _contents(
        pages
    )


def _contents(pages: dict[str, Page]) -> Page:
    """The home page of a site without an index page: the list of its pages."""
    note = (
        "<p>This site has no index page; its pages are listed in the navigation.</p>"
        if pages
        else ""
    )
    return Page("/", "", "Home", note or "<p>No pages were found in the site directory.</p>")


def render_document(page: Page, pages: dict[str, Page]) -> str:
    e = html.escape
    home = next((p for p in pages.values() if normalise_page(p.path) == "/"), None)
    site_title = home.title if home else "Sample site"
    title = site_title if normalise_page(page.path) == "/" else f"{page.title} · {site_title}"
    return _TEMPLATE.format(
        csp=e(_CSP),
        title=e(title),
        site_title=e(site_title),
        nav=_nav(page, pages),
        body=page.body,
    )


def _nav(page: Page, pages: dict[str, Page]) -> str:
    """Top-level pages as a list; each folder (posts/, guides/) as a group that opens when
    the current page is in it, so a site of many pages keeps a short nav."""
    groups: dict[str, list[Page]] = {}
    for p in sorted(pages.values(), key=lambda p: (normalise_page(p.path) != "/", p.path)):
        parts = normalise_page(p.path).strip("/").split("/")
        groups.setdefault(parts[0] if len(parts) > 1 else "", []).append(p)
    html_parts = []
    for folder in sorted(groups):
        members = groups[folder]
        items = "".join(_nav_item(p, p.path == page.path) for p in members)
        if not folder:
            html_parts.append(f'<ul class="top">{items}</ul>')
            continue
        label = html.escape(folder.replace("-", " ").capitalize())
        is_open = " open" if page in members else ""
        summary = f"<summary>{label} ({len(members)})</summary>"
        html_parts.append(f"<details{is_open}>{summary}<ul>{items}</ul></details>")
    return "".join(html_parts)


def _nav_item(page: Page, current: bool) -> str:
    mark = ' aria-current="page"' if current else ""
    return f'<li><a href="{html.escape(page.path)}"{mark}>{html.escape(page.title)}</a></li>'


# js-default: raw HTML off, no linkify, no typographer. Tables and strikethrough stay on.
_MD = MarkdownIt("js-default")


def _add_heading_ids(tokens: list[Token]) -> None:
    seen: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        base = slug(tokens[i + 1].content) or "section"
        anchor, n = base, 1
        while anchor in seen:
            n += 1
            anchor = f"{base}-{n}"
        seen.add(anchor)
        token.attrSet("id", anchor)


def _rewrite_links(tokens: list[Token], relative: str, permalinks: str) -> None:
    """Point links to sibling Markdown files (``waf.md#rules``) at their page URLs."""
    folder = PurePosixPath(relative).parent
    for token in tokens:
        for child in token.children or ():
            href = str(child.attrGet("href") or "")
            target, _, fragment = href.partition("#")
            if (
                child.type != "link_open"
                or ":" in target
                or not target.lower().endswith(PAGE_SUFFIXES)
            ):
                continue
            resolved = target if target.startswith("/") else os.path.normpath(folder / target)
            url = page_path(resolved.lstrip("/"), permalinks)
            child.attrSet("href", url + (f"#{fragment}" if fragment else ""))


_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/_site/site.css">
<script src="/widget/chatguard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><p class="brand"><a href="/">{site_title}</a></p></header>
<nav aria-label="Pages">{nav}</nav>
<main id="main">
{body}</main>
<footer class="site"><p>A chatguard demo, served offline: the chat answers from these pages
and cites them. Move between pages and ask again: the current page grounds the answer.</p>
</footer>
<chatguard-chat></chatguard-chat>
</body>
</html>
"""

SITE_CSS = """
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.6; }
body { margin: 0 auto; max-width: 72rem; padding: 0 1rem 6rem; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; }
header.site { border-bottom: 1px solid #8884; padding: 1rem 0 0.5rem; }
.brand { margin: 0; font-weight: 700; font-size: 1.25rem; }
.brand a { color: inherit; text-decoration: none; }
nav { font-size: 0.95rem; padding-top: 1rem; }
nav ul { list-style: none; margin: 0.25rem 0 0.75rem; padding: 0; }
nav li { margin: 0.15rem 0; }
nav details ul { padding-left: 0.75rem; }
nav summary { cursor: pointer; font-weight: 600; }
nav a[aria-current="page"] { font-weight: 700; text-decoration: none; }
main { min-width: 0; }
pre { overflow-x: auto; padding: 0.75rem; background: #8882; border-radius: 6px; }
code { font-size: 0.92em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #8886; padding: 0.25rem 0.5rem; }
footer.site { border-top: 1px solid #8884; margin-top: 3rem; font-size: 0.9rem; opacity: 0.8; }
html { background: #ffffff; color: #1f2328; }
@media (prefers-color-scheme: dark) {
  html { background: #0d1117; color: #e6edf3; }
  a { color: #8ab4f8; }
  a:visited { color: #c9a6f7; }
}
@media (min-width: 56rem) {
  body { display: grid; grid-template-columns: 15rem minmax(0, 46rem); gap: 0 3rem; }
  header.site { grid-column: 1 / -1; }
  nav { grid-column: 1; grid-row: 2 / 4; }
  main, footer.site { grid-column: 2; }
}
"""
