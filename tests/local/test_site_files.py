"""`chatguard serve --site DIR` on a built site (real Sphinx output, tests/data/real_pages)
serves the site's own files as they are, each HTML page with only the widget added, with
the right content types, and nothing outside the site whatever the path says."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from local.server import site
from local.server.site_files import WIDGET_SNIPPET, with_widget

REAL_SPHINX = Path(__file__).resolve().parents[1] / "data" / "real_pages" / "sphinx"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))  # any bytes: served as they are
SECRET = b"outside the site"


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A Sphinx site as it was built, plus the kinds of asset a site has; a secret beside it."""
    root = tmp_path / "html"
    shutil.copytree(REAL_SPHINX, root)
    static = root / "_static"
    static.mkdir()
    (static / "basic.css").write_text("div.body { max-width: 800px; }\n")
    (static / "doctools.js").write_text("'use strict';\n")
    (static / "logo.png").write_bytes(PNG)
    (static / "font.woff2").write_bytes(b"wOF2" + bytes(32))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "secret.txt").write_bytes(SECRET)
    return root


def get(root: Path, path: str) -> tuple[int, str, bytes] | None:
    return site.handle_get(path, root, "file")


def test_assets_are_served_as_they_are_with_their_types(built: Path) -> None:
    expected = {
        "/_static/basic.css": "text/css; charset=utf-8",
        "/_static/doctools.js": "text/javascript; charset=utf-8",
        "/_static/logo.png": "image/png",
        "/_static/font.woff2": "font/woff2",
    }
    for path, kind in expected.items():
        assert get(built, path) == (200, kind, (built / path[1:]).read_bytes()), path


def test_a_page_is_itself_with_only_the_widget_added(built: Path) -> None:
    original = (built / "intro.html").read_bytes()
    status, kind, body = get(built, "/intro.html") or (0, "", b"")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert body.count(WIDGET_SNIPPET) == 1
    assert body.replace(WIDGET_SNIPPET, b"") == original  # the page's own bytes, all of them
    assert body.index(WIDGET_SNIPPET) < body.rindex(b"</body>")
    assert b'href="_static/' in body  # its own assets, which the site serves


def test_the_home_and_folder_pages_are_their_index_html(built: Path) -> None:
    (built / "guide").mkdir()
    shutil.copy(built / "faq.html", built / "guide" / "index.html")
    shutil.copy(built / "intro.html", built / "index.html")
    assert (get(built, "/") or (0,))[0] == 200
    assert WIDGET_SNIPPET in (get(built, "/guide/") or (0, "", b""))[2]
    assert get(built, "/guide") is None  # as a plain static host: no such file
    assert site.handle_get("/guide", built, "pretty") is not None


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/_static/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/_static/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/_static/..%5c..%5csecret.txt",
        "//secret.txt",
        "/.git/config",
        "/_static/nope.css",
    ],
)
def test_nothing_outside_the_site_or_hidden_is_served(built: Path, path: str) -> None:
    assert get(built, path) is None


def test_a_naive_join_would_have_served_the_secret(built: Path) -> None:
    """The same paths joined onto the folder, as a naive file server does, reach outside."""
    naive = built / "_static/../../secret.txt".lstrip("/")
    assert naive.resolve().read_bytes() == SECRET
    assert get(built, "/_static/../../secret.txt") is None


def test_a_symlink_out_of_the_site_is_not_served(built: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", built / "_static" / "linked.txt")
    assert (built / "_static" / "linked.txt").read_bytes() == SECRET
    assert get(built, "/_static/linked.txt") is None


def test_an_excluded_page_is_not_served(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from indexer import policy

    monkeypatch.setattr(policy, "cdk_context", lambda: {"chatguard/index": {"exclude": ["faq*"]}})
    assert get(built, "/faq.html") is None and get(built, "/intro.html") is not None


def test_a_markdown_site_is_still_rendered(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "index.md").write_text("# Home\n\nHello.\n")
    (tmp_path / "s" / "raw.html").write_text("<html><body><p>Raw</p></body></html>")
    status, _, body = site.handle_get("/index.html", tmp_path / "s", "file") or (0, "", b"")
    assert status == 200 and b"/_site/site.css" in body  # the demo's rendering


def test_the_snippet_goes_before_the_last_body_end_in_any_case() -> None:
    assert (
        with_widget(b"<p>x</p></BODY ></html>") == b"<p>x</p>" + WIDGET_SNIPPET + b"</BODY ></html>"
    )
    assert with_widget(b"<p>no body end</p>") == b"<p>no body end</p>" + WIDGET_SNIPPET
