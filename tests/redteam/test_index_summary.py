"""Red team on the index summary (issue 28): when the reader leaves a page out as a utility
page, the build's one summary line is the only place that says so. Does it name the page?

It does when few pages are left out. Among many (a Sphinx site with viewcode leaves out one
page per documented module) it used to name five and count the rest, so a content page
taken for a utility page was named nowhere. Now every page is named or its folder is, with
its count, when three or more of the folder's pages are left out.
"""

from __future__ import annotations

from pathlib import Path

from indexer.build import BuildReport
from indexer.cli import summary

CONTENT_PAGE = "guide/search-api.html"  # say a rule took it for a utility page


def _report(utility: tuple[str, ...]) -> BuildReport:
    return BuildReport(
        pages=10, excluded=utility, chunks=40, tokens=4000, embedder="hashing", dimensions=8,
        out=Path("build/knowledge"), utility=utility,
    )  # fmt: skip


def test_a_page_left_out_among_few_is_named() -> None:
    line = summary(_report(("genindex.html", "search.html", CONTENT_PAGE)))
    assert CONTENT_PAGE in line and "3 utility pages left out" in line


def test_a_page_left_out_among_many_is_named() -> None:
    sources = tuple(f"_modules/pkg/module{i:02}.html" for i in range(12))
    line = summary(_report((*sources, CONTENT_PAGE)))
    assert CONTENT_PAGE in line and "12 under _modules/pkg/" in line
    assert "13 utility pages left out" in line


def test_naive_five_then_a_count_hides_the_page() -> None:
    # The previous summary's rule on the same report: the content page is past the five.
    sources = tuple(f"_modules/pkg/module{i:02}.html" for i in range(12))
    names = (*sources, CONTENT_PAGE)
    naive = ", ".join(names[:5]) + f", and {len(names) - 5} more"
    assert CONTENT_PAGE not in naive
