"""Red team on the index summary (issue 28): when the reader leaves a page out as a utility
page, the build's one summary line is the only place that says so. Does it name the page?

It does when few pages are left out. Among many (a Sphinx site with viewcode leaves out one
page per documented module) it names five and counts the rest, so a content page taken for
a utility page is not named anywhere (the artifact does not list them either). The fix is
in indexer/cli.py, outside the red team's area: the second test is a strict xfail that
fails as soon as the summary names every such page, to be turned into a plain test then.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.xfail(strict=True, reason="the summary names five and counts the rest")
def test_a_page_left_out_among_many_is_named() -> None:
    sources = tuple(f"_modules/pkg/module{i:02}.html" for i in range(12))
    line = summary(_report((*sources, CONTENT_PAGE)))
    assert CONTENT_PAGE in line
