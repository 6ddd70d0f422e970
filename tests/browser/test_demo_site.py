"""The demo site of `chatguard serve` (local.site.handle_get), without a browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from local import site
from steps.lib.grounding.knowledge import load_knowledge

ROOT = Path(__file__).resolve().parents[2]


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


def test_pages_live_at_the_indexers_paths(tiny_site: Path) -> None:
    assert get("/")[0] == 200
    status, kind, body = get("/posts/waf")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert "<title>Web application firewalls · Tiny &lt;Site&gt;</title>" in body
    assert site.handle_get("/posts/waf.md") is None
    assert site.handle_get("/posts/missing") is None


def test_page_content_is_escaped_never_rendered_as_markup(tiny_site: Path) -> None:
    body = get("/posts/waf")[2]
    main = body.split('<main id="main">')[1].split("</main>")[0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in main
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in main
    assert "<img" not in main and "<script" not in main and "<b>" not in main
    assert "javascript:" not in main.replace("[click](javascript:alert(1))", "")
    assert '<script src="/widget/chatguard.js" defer></script>' in body
    assert body.count("<script") == 1, "the widget is the only script on the page"


def test_every_page_carries_the_widget_a_nav_and_a_strict_csp(tiny_site: Path) -> None:
    for path in ("/", "/posts/waf"):
        body = get(path)[2]
        assert "<chatguard-chat></chatguard-chat>" in body
        assert re.search(r"script-src &#x27;self&#x27;;", body)
        nav = body.split('<nav aria-label="Pages">')[1].split("</nav>")[0]
        assert '<a href="/">Tiny &lt;Site&gt;</a>' in nav or 'aria-current="page">Tiny' in nav
        assert f'href="{path}" aria-current="page"' in nav


def test_excluded_pages_are_not_served(tiny_site: Path) -> None:
    assert site.handle_get("/drafts/secret") is None
    assert "/drafts/secret" not in get("/")[2]


def test_headings_get_the_anchors_the_widget_links_to(tiny_site: Path) -> None:
    body = get("/posts/waf")[2]
    assert '<h2 id="rate-rules">Rate rules</h2>' in body
    assert '<a href="/posts/waf#rate-rules">the WAF post</a>' in get("/")[2]


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
    assert site.handle_get("/widget/../local/site.py") is None


def test_the_widget_never_parses_network_text_as_html() -> None:
    source = (ROOT / "widget" / "chatguard.js").read_text(encoding="utf-8")
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.DOTALL)
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in code, sink


def test_every_page_the_index_cites_is_served() -> None:
    """Source links in replies point at chunk pages: each one must be a demo page."""
    knowledge = ROOT / "build" / "knowledge" / "knowledge.json"
    if not knowledge.exists():
        pytest.skip("the sample index is not built (make index)")
    pages = set(load_knowledge(knowledge.parent).pages)
    assert pages
    for page in sorted(pages):
        found = site.handle_get(page)
        assert found is not None and found[0] == 200, page
