"""Red team on the reader's utility-page rules (issue 28): a page that shows a utility page's
markup as text (a page on theming, redirects or Doxygen set-up quotes it in a code block)
must stay a content page. The rules read markup, never text: hypothesis quotes any mix of
the markers, escaped as a generator writes code, into real content pages of each generator,
at the top of the body, where the rules that read a page's first kilobytes look.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from indexer.utility import utility_kind

REAL_PAGES = Path(__file__).resolve().parents[1] / "data" / "real_pages"
CONTENT_PAGES = (  # content pages of real generator output (each a content page as shipped)
    "docsy/docs/tutorial-basics/create-a-document/index.html",
    "docusaurus/index.html",
    "doxygen/starting.html",
    "hugo/posts/goisforlovers/index.html",
    "jekyll/about/index.html",
    "material/reference.html",
    "sphinx-rtd/overview.html",
)
MARKERS = (
    '<meta http-equiv="refresh" content="0; url=new.html">',
    '<meta name="generator" content="Doxygen 1.9.8">',
    '<meta name="generator" content="Hugo 0.120.4">',
    '<link rel="alternate" type="application/rss+xml" href="/index.xml">',
    '<meta name="generator" content="Docusaurus v3.1.0">',
    '<html class="plugin-blog blog-list-page">',
    '<div class="generatedIndexPage_vN">',
    '<body class="td-section td-taxonomy">',
    '<div class="td-main">',
    '<div class="viewcode-block" id="f">',
    '<script src="_static/documentation_options.js"></script>',
)


def _quoted(page: str, markers: list[str]) -> str:
    code = html.escape("\n".join(markers))
    at = page.index(">", page.index("<body")) + 1
    return f"{page[:at]}<pre><code>{code}</code></pre>{page[at:]}"


@pytest.mark.parametrize("relative", CONTENT_PAGES)
def test_each_real_content_page_is_content_as_shipped(relative: str) -> None:
    assert utility_kind(relative, (REAL_PAGES / relative).read_text(encoding="utf-8")) is None


@settings(max_examples=60, deadline=None)
@given(
    relative=st.sampled_from(CONTENT_PAGES),
    markers=st.lists(st.sampled_from(MARKERS), min_size=1, max_size=len(MARKERS)),
    short_head=st.booleans(),
)
def test_markup_quoted_as_text_makes_no_utility_page(
    relative: str, markers: list[str], short_head: bool
) -> None:
    page = (REAL_PAGES / relative).read_text(encoding="utf-8")
    if short_head:  # the body within the first kilobytes, where the head-only rules read
        page = "<html><head><title>t</title></head>" + page[page.index("<body") :]
    assert utility_kind(relative, _quoted(page, markers)) is None


# Class names written in prose: HTML text needs no escaping for "=", so they reach the
# rules as they are.
PROSE = ("class=generatedIndexPage_vN", "class=viewcode-block", "class=td-main")


@settings(max_examples=30, deadline=None)
@given(relative=st.sampled_from(CONTENT_PAGES), words=st.lists(st.sampled_from(PROSE), min_size=1))
@example(relative="docusaurus/index.html", words=[PROSE[0]])  # was a "category index"
def test_class_names_in_prose_make_no_utility_page(relative: str, words: list[str]) -> None:
    page = (REAL_PAGES / relative).read_text(encoding="utf-8")
    at = page.index(">", page.index("<body")) + 1
    prose = f"<p>Set {' or '.join(words)} on the element.</p>"
    assert utility_kind(relative, page[:at] + prose + page[at:]) is None


def test_naive_a_class_name_anywhere_took_prose_for_markup() -> None:
    # The rule before, on Docusaurus's real home page with the class named in a sentence.
    before = re.compile(r"class=[\"']?generatedIndexPage_")
    page = (REAL_PAGES / "docusaurus/index.html").read_text(encoding="utf-8")
    assert before.search(page) is None
    assert before.search(page.replace("<body", "<p>Set class=generatedIndexPage_vN.</p><body"))


def test_naive_the_same_markup_unescaped_is_read_as_markup() -> None:
    # What the property rules out: the rules do read these markers when they are markup.
    page = "<html><head></head><body><h1>Moved</h1></body></html>"
    unescaped = page.replace("<body>", "<body>" + MARKERS[0])
    assert utility_kind("old.html", unescaped) == "redirect"
    assert utility_kind("old.html", _quoted(page, [MARKERS[0]])) is None
