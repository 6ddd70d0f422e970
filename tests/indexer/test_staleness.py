"""An index is stale when its text changed, not its bytes: the README's embed snippet added
to every page of a site leaves the index current; a changed word makes it stale. Shown on
the real commands (`chatguard index`, then `chatguard chat --site`), which warn in one line
when the site changed since the index was built."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.policy import IndexPolicy
from indexer.provenance import BYTES, TEXT, TEXT_LINKS, drift, read_record, record_site
from steps.lib.grounding.knowledge import load_knowledge

ROOT = Path(__file__).resolve().parents[2]
REAL_SPHINX = ROOT / "tests" / "data" / "real_pages" / "sphinx"


@pytest.fixture(autouse=True)
def hashing_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "hashing")  # the index is built with it too
    load_knowledge.cache_clear()


def embed_snippet() -> str:
    """The cross-origin snippet exactly as the README's "Embed the widget" section gives it."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Embed the widget")[1]
    snippet = re.search(r"```html\n(.*?)```", section, re.DOTALL)
    assert snippet and "chatguard.js" in snippet.group(1)
    return snippet.group(1)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site of Markdown pages and real Sphinx-built HTML pages."""
    site = tmp_path / "docs"
    (site / "api").mkdir(parents=True)
    (site / "index.md").write_text("# Harbour docs\n\nThe harbour opens at seven.\n")
    (site / "tides.md").write_text("# Tides\n\nHigh tide is at noon.\n\n## Spring\n\nHigher.\n")
    for name in ("intro.html", "faq.html"):
        shutil.copy(REAL_SPHINX / name, site / "api" / name)
    return site


def add_snippet(site: Path) -> int:
    """The snippet in every page: before </body> of an HTML page, at the end of Markdown."""
    pages = [*site.rglob("*.md"), *site.rglob("*.html")]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.suffix == ".html":
            assert "</body>" in text
            text = text.replace("</body>", embed_snippet() + "</body>")
        else:
            text += "\n" + embed_snippet()
        page.write_text(text, encoding="utf-8")
    return len(pages)


def index_and_chat(site: Path, knowledge: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`chatguard chat` on the site and its index: what it says on stderr."""
    capsys.readouterr()
    argv = ["chat", "When does the harbour open?", "--site", str(site)]
    assert main([*argv, "--knowledge", str(knowledge), "--json"]) == 0
    return capsys.readouterr().err


def test_the_embed_snippet_on_every_page_leaves_the_index_current(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knowledge = tmp_path / "k"
    assert main(["index", str(site), "--out", str(knowledge), "--embedder", "hashing"]) == 0
    before = {p: p.read_bytes() for p in site.rglob("*.*")}

    assert add_snippet(site) == 4
    assert all(p.read_bytes() != data for p, data in before.items())  # every file changed
    assert "changed since the index" not in index_and_chat(site, knowledge, capsys)
    record = read_record(knowledge)
    assert record is not None and not drift(record, site).stale


def test_a_changed_word_still_makes_the_index_stale(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knowledge = tmp_path / "k"
    assert main(["index", str(site), "--out", str(knowledge), "--embedder", "hashing"]) == 0
    add_snippet(site)
    faq = site / "api" / "faq.html"
    faq.write_text(faq.read_text(encoding="utf-8").replace("relatively fast", "fast"))
    tides = site / "tides.md"
    tides.write_text(tides.read_text(encoding="utf-8").replace("noon", "one"))
    err = index_and_chat(site, knowledge, capsys)
    assert "changed since the index" in err and "2 changed (api/faq.html, tides.md)" in err


def test_a_changed_anchor_makes_the_index_stale(site: Path, tmp_path: Path) -> None:
    """A source link carries the section's anchor: the same words under a new id are a
    change the index must follow."""
    knowledge = tmp_path / "k"
    assert main(["index", str(site), "--out", str(knowledge), "--embedder", "hashing"]) == 0
    intro = site / "api" / "intro.html"
    html = intro.read_text(encoding="utf-8").replace('id="installation"', 'id="install"')
    intro.write_text(html.replace('href="#installation"', 'href="#install"'))
    record = read_record(knowledge)
    assert record is not None and drift(record, site).changed == ("api/intro.html",)


def test_digests_of_bytes_call_every_page_changed(site: Path) -> None:
    """The naive record (a digest of each file's bytes) on the same change: all stale."""
    policy = IndexPolicy((), ())
    by_bytes = record_site(site, policy, digests=BYTES)
    add_snippet(site)
    assert len(drift(by_bytes, site).changed) == 4
    assert not drift(record_site(site, policy), site).stale  # text digests: none


def test_an_older_record_of_bytes_is_still_compared_by_bytes(site: Path) -> None:
    """An index built before text digests keeps working: its record says nothing of
    digests, so it is read as bytes and compared by bytes, never as all-changed noise."""
    record = record_site(site, IndexPolicy((), ()), digests=BYTES)
    raw = record.as_json()
    del raw["digests"]
    older = type(record).from_json(raw)
    assert older.digests == BYTES and not drift(older, site).stale


def test_a_changed_link_makes_the_index_stale_and_an_older_record_is_not_called_stale(
    site: Path,
) -> None:
    """The index keeps each section's links ("also see" follows them): the same words
    linking elsewhere are a change it must follow. A record written before links were
    digested (the naive digest, text alone) misses that change, and an index built then
    is not called stale for lacking links (it still loads and answers, without them)."""
    policy = IndexPolicy((), ())
    record = record_site(site, policy)
    assert record.digests == TEXT_LINKS
    older_raw = record_site(site, policy, digests=TEXT).as_json()
    older = type(record).from_json(older_raw)
    assert not drift(older, site).stale
    intro = site / "api" / "intro.html"
    html = intro.read_text(encoding="utf-8")
    link = 'href="https://markupsafe.palletsprojects.com/">MarkupSafe'
    assert link in html
    intro.write_text(html.replace(link, 'href="faq.html">MarkupSafe'), encoding="utf-8")
    assert drift(record, site).changed == ("api/intro.html",)
    assert not drift(older, site).stale  # text alone: the new link goes unseen
