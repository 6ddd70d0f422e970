"""Red team on the reader's utility-page rules (issue 28): a content page must not be left
out, or lose sections, because it carries a marker that utility pages also carry.

Each case failed before its fix (indexer/utility.py, indexer/list_pages.py) and shows the
earlier rule leaving the page out on the same input.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from indexer import list_pages, utility
from indexer.html_reader import own_blocks, read_html
from indexer.pages import parse_html
from indexer.utility import utility_kind

# A Hugo single page as themes write it: generator meta, its own address, and the site's
# feed linked from every page (not a feed of its own: single pages have none).
HUGO_SINGLE_HEAD = (
    '<!doctype html><html><head><meta name="generator" content="Hugo 0.120.4">'
    '<meta property="og:url" content="https://example.org/docs/upgrading/" />'
    '<link rel="alternate" type="application/rss+xml" href="/index.xml" title="Site" />'
    "<title>Upgrading</title></head><body><main>"
)
# Its sections are headed by links to the pages they are about.
LINKED_SECTIONS = (
    '<h2><a href="/docs/config/">Configuration</a></h2>'
    "<p>The key timeout_ms was renamed timeout and now takes seconds.</p>"
    '<h2><a href="/docs/cli/">Command line</a></h2>'
    "<p>The flag --fast is removed; use --mode=fast instead.</p></main></body></html>"
)


def _texts(content: str) -> str:
    return " ".join(block.text for block in parse_html(content)[1])


def test_a_hugo_page_with_linked_section_headings_is_indexed_whole() -> None:
    page = HUGO_SINGLE_HEAD + "<h1>Upgrading to 2.0</h1>" + LINKED_SECTIONS
    assert utility_kind("docs/upgrading/index.html", page) is None
    with_intro = HUGO_SINGLE_HEAD + "<h1>Upgrading</h1><p>Read this first.</p>" + LINKED_SECTIONS
    assert utility_kind("docs/upgrading/index.html", with_intro) is None
    text = _texts(with_intro)
    assert "now takes seconds" in text and "--mode=fast" in text


@pytest.mark.parametrize("feed", ["../../index.xml", "/index.xml", "https://example.org/index.xml"])
def test_the_site_feed_however_written_makes_no_list(feed: str) -> None:
    page = HUGO_SINGLE_HEAD.replace('href="/index.xml"', f'href="{feed}"') + LINKED_SECTIONS
    assert utility_kind("docs/upgrading/index.html", page) is None


def test_naive_the_site_feed_alone_made_it_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    # The rule before: any Hugo page linking a feed, with two linked headings, is a list:
    # the page is left out whole, or with an intro indexed as the intro alone.
    monkeypatch.setattr(list_pages, "_feeds_elsewhere", lambda head: False)
    page = HUGO_SINGLE_HEAD + "<h1>Upgrading to 2.0</h1>" + LINKED_SECTIONS
    assert utility_kind("docs/upgrading/index.html", page) == "list of pages"
    with_intro = HUGO_SINGLE_HEAD + "<h1>Upgrading</h1><p>Read this first.</p>" + LINKED_SECTIONS
    assert "now takes seconds" not in _texts(with_intro)


@pytest.mark.parametrize(
    ("own", "feed"),
    [
        ("/posts/", "/posts/index.xml"),  # Hugo Book's section
        ("https://example.org/", "https://example.org/index.xml"),  # the home page
        ("https://example.org/p/docs/", "/p/docs/index.xml"),  # a site under a sub-path
        ("https://example.org/posts/", "index.xml"),  # relativeURLs: from the page itself
        ("/posts/", "./index.xml"),
    ],
)
def test_a_list_page_linking_its_own_feed_is_still_a_list(own: str, feed: str) -> None:
    head = HUGO_SINGLE_HEAD.replace("https://example.org/docs/upgrading/", own)
    page = head.replace('href="/index.xml"', f'href="{feed}"') + LINKED_SECTIONS
    assert utility_kind("posts/index.html", page) == "list of pages"


@pytest.mark.parametrize("relative", ["api/search.html", "errors/404.html"])
def test_a_content_page_below_the_root_may_be_named_search_or_404(relative: str) -> None:
    page = "<html><body><h1>search(query)</h1><p>Runs the query and returns hits.</p></body></html>"
    assert utility_kind(relative, page) is None
    assert utility_kind(relative.rsplit("/", 1)[1], page) is not None  # at the root: utility


def test_naive_a_name_anywhere_left_the_content_page_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(utility, "_ANY_SITE", utility._ANY_SITE + utility._SITE_ROOT)
    assert utility_kind("api/search.html", "<h1>search(query)</h1>") == "search page"


def test_a_refresh_for_visitors_without_javascript_is_no_redirect() -> None:
    # Some sites send no-JS visitors to a fallback from every page's head.
    head = '<noscript><meta http-equiv="refresh" content="0; url=/nojs.html"></noscript>'
    page = f"<html><head>{head}</head><body><h1>Install</h1><p>Run it.</p></body></html>"
    assert utility_kind("install.html", page) is None
    assert utility_kind("install.html", page.replace("noscript", "x-noscript")) == "redirect"


def test_a_page_that_refreshes_itself_is_no_redirect() -> None:
    status = '<html><head><meta http-equiv="refresh" content="60"></head><body><p>Up.</p>'
    assert utility_kind("status.html", status) is None
    moved = '<html><head><meta http-equiv="refresh" content="0; URL=\'new.html\'"></head>'
    assert utility_kind("old.html", moved) == "redirect"


DOXYGEN_HEAD = '<html><head><meta name="generator" content="Doxygen 1.9.8"/></head>'


@pytest.mark.parametrize("name", ["globals_8h.html", "functions_8c.html", "files_8h.html"])
def test_a_doxygen_file_page_named_like_an_index_is_kept(name: str) -> None:
    # The page documenting globals.h, functions.c or files.h: Doxygen writes "." as "_8".
    page = DOXYGEN_HEAD + "<h1>globals.h File Reference</h1><p>Global state.</p>"
    assert utility_kind(name, page) is None
    assert utility_kind("globals_n.html", page) == "member index"  # the index itself
    assert utility_kind(name.replace(".html", "_source.html"), page) == "source listing"


def test_naive_the_index_name_alone_left_the_file_page_out() -> None:
    page = DOXYGEN_HEAD + "<h1>globals.h File Reference</h1>"
    kinds = [kind for pattern, kind in utility._DOXYGEN if fnmatchcase("globals_8h.html", pattern)]
    assert kinds == ["member index"]  # what the name alone said before
    assert utility_kind("globals_8h.html", page) is None


DOCSY_LISTS = frozenset({"section-index", "td-blog-posts"})  # list_pages.py
DOCSY_SECTION = Path(__file__).resolve().parents[1] / "data/real_pages/docsy/docs/index.html"
OWN_TEXT = (
    "<p>Intro to the docs.</p>"
    '<h2><a href="/docs/install/">Install</a></h2><p>Run pip install foo before anything.</p>'
    '<h2><a href="/docs/run/">Run</a></h2><p>Start it with foo serve.</p>'
)


def _docsy_section_with_own_text() -> str:
    """Docsy's real section page (its generated list of pages below), with text of its own
    after the title whose headings link to the pages they introduce."""
    page = DOCSY_SECTION.read_text(encoding="utf-8")
    title_end = page.index("</h1>", page.index('class="td-content"')) + len("</h1>")
    return page[:title_end] + OWN_TEXT + page[title_end:]


def test_a_docsy_section_keeps_its_own_text_whatever_its_headings_link_to() -> None:
    page = _docsy_section_with_own_text()
    assert utility_kind("docs/index.html", page) is None
    kept = [block.text for block in parse_html(page)[1]]
    text = " ".join(kept)
    assert "pip install foo" in text and "foo serve" in text
    # The list Docsy generated is still left out.
    everything = {block.text for block in read_html(page).blocks}
    listed = everything - {block.text for block in read_html(page, DOCSY_LISTS).blocks}
    assert listed and not listed & set(kept)


def test_naive_dropping_linked_sections_on_docsy_cut_its_own_text() -> None:
    # The rule before: Docsy's own text also lost every section headed by a link.
    page = _docsy_section_with_own_text()
    before = own_blocks(read_html(page, DOCSY_LISTS).blocks)
    assert "pip install foo" not in " ".join(block.text for block in before)
