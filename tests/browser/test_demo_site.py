"""The demo site of `chatguard serve` (local.server.site.handle_get), without a browser."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from indexer.build import build
from indexer.policy import IndexPolicy
from local.server import site
from steps.lib.grounding.knowledge import load_knowledge, normalise_page
from steps.lib.grounding.retrieval import degraded_answer
from steps.lib.providers.hashing_embedder import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SITE = ROOT / "examples" / "site"


@pytest.fixture
def tiny_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "posts").mkdir()
    (tmp_path / "drafts").mkdir()
    (tmp_path / "index.md").write_text(
        "---\ntitle: Tiny <Site>\n---\n# Tiny\n\nSee [the WAF post](posts/waf.md#rate-rules).\n"
        "\n<script>window.pwned = 1</script>\n",
        encoding="utf-8",
    )
    (tmp_path / "posts" / "waf.md").write_text(
        "# Web application firewalls\n\nA WAF filters <img src=x onerror=alert(1)>.\n\n"
        "## Rate rules\n\n[click](javascript:alert(1)) and `<b>code</b>`\n\n"
        "```html\n<script>alert('x')</script>\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "drafts" / "secret.md").write_text("# Not yet\n\nunpublished\n", "utf-8")
    monkeypatch.setenv(site.SITE_DIR_ENV, str(tmp_path))
    return tmp_path


def get(path: str) -> tuple[int, str, str]:
    found = site.handle_get(path)
    assert found is not None, f"{path} was not found"
    status, kind, body = found
    return status, kind, body.decode("utf-8")


def test_pages_live_at_the_indexers_links(tiny_site: Path) -> None:
    assert get("/")[2] == get("/index.html")[2]
    status, kind, body = get("/posts/waf.html")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert "<title>Web application firewalls · Tiny &lt;Site&gt;</title>" in body
    # Only at its link, as a static host serves it: the suffix-less path is a 404 there.
    for path in ("/posts/waf.md", "/posts/waf", "/posts/missing.html"):
        assert site.handle_get(path) is None, path


def test_pretty_permalinks_serve_pages_without_the_suffix(tiny_site: Path) -> None:
    assert site.handle_get("/posts/waf", permalinks="pretty") is not None
    assert site.handle_get("/posts/waf.html", permalinks="pretty") is None
    home = site.handle_get("/", permalinks="pretty")
    assert home is not None and b'<a href="/posts/waf#rate-rules">' in home[2]


def test_page_content_is_escaped_never_rendered_as_markup(tiny_site: Path) -> None:
    body = get("/posts/waf.html")[2]
    main = body.split('<main id="main">')[1].split("</main>")[0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in main
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in main
    assert "<img" not in main and "<script" not in main and "<b>" not in main
    assert "javascript:" not in main.replace("[click](javascript:alert(1))", "")
    assert '<script src="/widget/chatguard.js" defer></script>' in body
    assert body.count("<script") == 1, "the widget is the only script on the page"


def test_every_page_carries_the_widget_a_nav_and_a_strict_csp(tiny_site: Path) -> None:
    for path in ("/index.html", "/posts/waf.html"):
        body = get(path)[2]
        assert "<chatguard-chat></chatguard-chat>" in body
        assert re.search(r"script-src &#x27;self&#x27;;", body)
        nav = body.split('<nav aria-label="Pages">')[1].split("</nav>")[0]
        assert '<a href="/index.html"' in nav and "Tiny &lt;Site&gt;</a>" in nav
        assert f'href="{path}" aria-current="page"' in nav


def test_excluded_pages_are_not_served(tiny_site: Path) -> None:
    assert site.handle_get("/drafts/secret.html") is None
    assert "/drafts/secret" not in get("/")[2]


def test_headings_get_the_anchors_the_widget_links_to(tiny_site: Path) -> None:
    body = get("/posts/waf.html")[2]
    assert '<h2 id="rate-rules">Rate rules</h2>' in body
    assert '<a href="/posts/waf.html#rate-rules">the WAF post</a>' in get("/")[2]


def test_paths_outside_the_site_are_not_found(tiny_site: Path) -> None:
    (tiny_site.parent / "outside.md").write_text("# outside\n", "utf-8")
    for path in ("/../outside", "/..%2Foutside", "//etc/passwd", "/posts/../index", "/index"):
        assert site.handle_get(path) is None, path


def test_widget_files_are_served_with_their_types() -> None:
    js = site.handle_get("/widget/chatguard.js")
    css = site.handle_get("/widget/chatguard.css")
    assert js is not None and js[:2] == (200, "text/javascript; charset=utf-8")
    assert css is not None and css[:2] == (200, "text/css; charset=utf-8")
    assert b"customElements.define" in js[2]
    assert site.handle_get("/widget/../local/server/site.py") is None


def test_the_widget_never_parses_network_text_as_html() -> None:
    source = (ROOT / "widget" / "chatguard.js").read_text(encoding="utf-8")
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.DOTALL)
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in code, sink


@pytest.mark.parametrize("permalinks", ["file", "pretty"])
def test_every_link_the_index_gives_is_served(tmp_path: Path, permalinks: str) -> None:
    """Source links in replies are the chunks' pages: with either permalink setting, each
    one is a page of the local server built with that setting (a page link the host
    would not serve is a 404 here, see test_pages_live_at_the_indexers_links)."""
    out = tmp_path / "knowledge"
    policy = replace(IndexPolicy.from_context(), permalinks=permalinks)
    build(SAMPLE_SITE, out, policy, HashingEmbedder())
    kb = load_knowledge(out)
    links = {chunk.page for chunk in kb.chunks}
    suffixed = {link for link in links if link.endswith(".html")}
    assert suffixed == (links if permalinks == "file" else set())
    for link in sorted(links):
        found = site.handle_get(link, SAMPLE_SITE, permalinks)
        assert found is not None and found[0] == 200, link
    # The degraded answer links its chunk's page, whichever form the visitor's page takes.
    for visitor_on in ("/posts/waf-rate-limiting", "/posts/waf-rate-limiting.html"):
        chunk = degraded_answer(kb, "rate-based rule window", page=visitor_on)
        assert chunk is not None and chunk.page in links
        assert normalise_page(chunk.page) == "/posts/waf-rate-limiting"
