"""Utility pages: recognised by name or by what the page says it is, left out by default,
said once in the build's summary, kept on request (flag or cdk.json)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.cli import policy_from
from indexer.policy import IndexPolicy, PolicyError
from indexer.utility import utility_kind

REAL_PAGES = Path(__file__).resolve().parents[1] / "data" / "real_pages"
DOXYGEN_HEAD = '<html><head><meta name="generator" content="Doxygen 1.8.16"/></head>'


@pytest.mark.parametrize(
    ("relative", "content", "kind"),
    [
        ("genindex.html", "", "general index"),
        ("api/genindex-A.html", "", "general index"),
        ("py-modindex.html", "", "module index"),
        ("search.html", "", "search page"),
        ("404.html", "", "404 page"),
        ("old.html", '<meta http-equiv="refresh" content="0; url=new.html">', "redirect"),
        ("globals_n.html", DOXYGEN_HEAD, "member index"),
        ("search/all_2.html", DOXYGEN_HEAD, "search page"),
        ("lmdb_8h_source.html", DOXYGEN_HEAD, "source listing"),
        ("tags/go/index.html", '<meta name="generator" content="Hugo 0.111.3">', "taxonomy index"),
    ],
)
def test_utility_pages_are_recognised(relative: str, content: str, kind: str) -> None:
    assert utility_kind(relative, content) == kind


@pytest.mark.parametrize(
    ("relative", "content"),
    [
        ("functions.html", "<h1>Functions</h1>"),  # Doxygen's name, not a Doxygen page
        ("search/index.html", "<h1>How we search</h1>"),
        ("research.html", DOXYGEN_HEAD),
        ("tags/go/index.html", "<h1>Go</h1>"),  # not a page Hugo wrote
        ("genindex.md", ""),  # a Markdown source is the site owner's own page
        ("guides/404-errors.html", ""),
    ],
)
def test_content_pages_with_such_names_are_kept(relative: str, content: str) -> None:
    assert utility_kind(relative, content) is None


def test_the_flag_and_cdk_json_keep_them() -> None:
    context = {"chatguard/index": {"keep_utility_pages": True}}
    assert IndexPolicy.from_context(context).keep_utility_pages
    assert not IndexPolicy.from_context({}).keep_utility_pages
    with pytest.raises(PolicyError, match="keep_utility_pages"):
        IndexPolicy.from_context({"chatguard/index": {"keep_utility_pages": "yes"}})
    args = argparse.Namespace(
        exclude=None, forbidden=None, permalinks=None, keep_utility_pages=True
    )
    assert policy_from(args).keep_utility_pages


def test_the_build_says_once_which_it_left_out_and_how_to_keep_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    shutil.copytree(REAL_PAGES / "sphinx", site)
    argv = ["index", str(site), "--out", str(tmp_path / "k"), "--embedder", "hashing"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("utility pages left out") == 1 and "--keep-utility-pages" in out
    assert "3 utility pages" in out and "search.html" in out and "indexed 2 pages" in out
    assert main([*argv, "--keep-utility-pages"]) == 0
    out = capsys.readouterr().out
    assert "utility" not in out and "indexed 5 pages" in out
