"""A built site served as itself: `chatguard serve --site DIR` on the output of a generator
(Sphinx, MkDocs, Hugo, Jekyll, Doxygen...) serves the site's own files, its CSS, scripts,
images and fonts byte for byte, and each HTML page with only the widget added (the
README's same-origin snippet, before ``</body>``), so a site owner previews their real
site with the chat on it, not a re-rendering of its text.

A folder is a built site when it holds HTML pages and no Markdown page (a Markdown source
folder, such as examples/site, is rendered by local/server/site.py instead).

Paths are served as a static host serves them: a file at its path (``/_static/basic.css``),
a folder's ``index.html`` at ``/folder/`` and at ``/``; with "pretty" permalinks
``/guide`` is ``guide.html`` too. The index's exclusion globs apply to pages (an excluded
draft is not served); hidden files and folders (``.git/``) never are.

Safe against path traversal by construction: a request path is looked up, after
percent-decoding, in a table of the files found by listing the site directory; it is never
joined onto a filesystem path. A file whose real path (symlinks resolved) is outside the
site is not in the table.
"""

from __future__ import annotations

import mimetypes
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from indexer.pages import HTML_SUFFIXES, MARKDOWN_SUFFIXES
from indexer.policy import IndexPolicy

Response = tuple[int, str, bytes]

# The same-origin embed snippet of the README ("Embed the widget").
WIDGET_SNIPPET = (
    b'<script src="/widget/chatguard.js" defer></script>\n<chatguard-chat></chatguard-chat>\n'
)
# Common web types by suffix, so a page's assets get the same type on any machine
# (mimetypes reads the system's tables, which differ); anything else asks mimetypes.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/vnd.microsoft.icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".eot": "application/vnd.ms-fontobject",
    ".pdf": "application/pdf",
    ".wasm": "application/wasm",
}
_BODY_END = re.compile(rb"</body\s*>", re.IGNORECASE)


def is_built_site(files: dict[str, Path]) -> bool:
    """HTML pages and no Markdown page: a generator's output, served as it is."""
    suffixes = {PurePosixPath(url).suffix.lower() for url in files}
    return bool(suffixes & set(HTML_SUFFIXES)) and not suffixes & set(MARKDOWN_SUFFIXES)


def handle_file(path: str, files: dict[str, Path], permalinks: str = "file") -> Response | None:
    """(200, content type, bytes) of the file at URL `path` in `files` (file_table), HTML
    with the widget added; None when the site has no such file (or may not serve it)."""
    wanted = unquote(path.split("?", 1)[0].split("#", 1)[0])
    found = next((files[c] for c in candidates(wanted, permalinks) if c in files), None)
    if found is None:
        return None
    kind = content_type(found)
    data = found.read_bytes()
    return 200, kind, with_widget(data) if kind.startswith("text/html") else data


def candidates(path: str, permalinks: str) -> list[str]:
    """The files a static host would answer `path` with, most specific first."""
    if path.endswith("/"):
        return [path + "index.html"]
    return [path, path + ".html", path + "/index.html"] if permalinks == "pretty" else [path]


def with_widget(page: bytes) -> bytes:
    """The page's bytes with the snippet before its last ``</body>`` (appended if none)."""
    ends = list(_BODY_END.finditer(page))
    at = ends[-1].start() if ends else len(page)
    return page[:at] + WIDGET_SNIPPET + page[at:]


def content_type(path: Path) -> str:
    known = CONTENT_TYPES.get(path.suffix.lower())
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def file_table(directory: Path) -> dict[str, Path]:
    """URL path ("/_static/basic.css") -> file, for every file the site may serve, page
    files excluded by the index's globs included only for telling a built site apart."""
    return _table(directory, tuple((str(p), m) for p, m in _listing(directory)))


@lru_cache(maxsize=4)  # one entry per state of the site: re-listed only when a file changes
def _table(directory: Path, signature: tuple[tuple[str, int], ...]) -> dict[str, Path]:
    policy = IndexPolicy.from_context()
    root = directory.resolve()
    table: dict[str, Path] = {}
    for name, _ in signature:
        path = Path(name)
        relative = path.relative_to(directory).as_posix()
        if relative.lower().endswith(HTML_SUFFIXES) and policy.excluded(relative):
            continue  # a page the index leaves out is not served either
        if not path.resolve().is_relative_to(root):
            continue  # a symlink out of the site
        table["/" + relative] = path
    return table


def _listing(directory: Path) -> list[tuple[Path, int]]:
    """Every file under `directory` (hidden ones left out) with its modification time."""
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.rglob("*")):
        parts = PurePosixPath(path.relative_to(directory).as_posix()).parts
        if any(part.startswith(".") for part in parts) or not path.is_file():
            continue
        out.append((path, path.stat().st_mtime_ns))
    return out
