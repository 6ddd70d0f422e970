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
SPHINX_HEAD = '<html><head><script src="../_static/documentation_options.js"></script></head>'


def docusaurus(html_class: str, body: str = "") -> str:
    """A page head as Docusaurus minifies it: unquoted attributes, page type on <html>."""
    return (
        f'<!doctype html><html lang=en class="{html_class}"><head>'
        f'<meta name=generator content="Docusaurus v3.10.2"></head><body>{body}</body></html>'
    )


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
        ("_modules/index.html", SPHINX_HEAD, "source listing"),
        ("_modules/pkg/mod.html", '<div class="viewcode-block" id="f">', "source listing"),
        ("blog/index.html", docusaurus("blog-wrapper blog-list-page plugin-blog"), "list of posts"),
        ("blog/archive/index.html", docusaurus("plugin-blog plugin-id-default"), "list of posts"),
        ("blog/tags/x/index.html", docusaurus("blog-tags-post-list-page plugin-blog"),
         "list of posts"),
        ("docs/tags/x/index.html", docusaurus("plugin-docs docs-tags-doc-list-page"), "tag index"),
        ("docs/category/x/index.html",
         docusaurus("plugin-docs docs-doc-page", "<div class=generatedIndexPage_vN>"),
         "category index"),
    ],
)  # fmt: skip
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
        ("_modules/intro.html", "<h1>Modules</h1>"),  # the folder's name, not a Sphinx page
        ("api.html", '<a class="reference internal" href="_modules/m.html#f">'
         '<span class="viewcode-link">[source]</span></a>'),  # a page linking to the source
        ("blog/welcome/index.html", docusaurus("blog-wrapper blog-post-page plugin-blog")),
        ("docs/intro/index.html", docusaurus("plugin-docs docs-doc-page docs-doc-id-intro")),
        ("blog/index.html", '<html class="blog-list-page plugin-blog">'),  # not Docusaurus's
    ],
)  # fmt: skip
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


def test_the_real_viewcode_and_docusaurus_list_pages_are_recognised() -> None:
    """On the vendored real output, each recognition rests on what the generator wrote: the
    same files with that markup taken out are content pages."""
    sphinx = REAL_PAGES / "sphinx-alabaster"
    listing = (sphinx / "_modules/requests/exceptions.html").read_text(encoding="utf-8")
    assert utility_kind("_modules/requests/exceptions.html", listing) == "source listing"
    plain = listing.replace("viewcode-", "x-").replace("documentation_options", "x")
    assert utility_kind("_modules/requests/exceptions.html", plain) is None
    index = (sphinx / "_modules/index.html").read_text(encoding="utf-8")
    assert utility_kind("_modules/index.html", index) == "source listing"
    blog = (REAL_PAGES / "docusaurus/blog/index.html").read_text(encoding="utf-8")
    assert utility_kind("blog/index.html", blog) == "list of posts"
    assert utility_kind("blog/index.html", blog.replace("Docusaurus v", "x")) is None


def test_a_docsy_section_is_a_list_page_only_without_text_of_its_own() -> None:
    """Docsy names the Hugo kind on <body> and writes a section's index of its pages in a
    "section-index" element: docs/index.html has nothing else, docs/tutorial-basics/ has
    its description too. Without Docsy's main element, the same markup is nobody's."""
    site = REAL_PAGES / "docsy"
    index = (site / "docs/index.html").read_text(encoding="utf-8")
    assert utility_kind("docs/index.html", index) == "list of pages"
    own = (site / "docs/tutorial-basics/index.html").read_text(encoding="utf-8")
    assert "section-index" in own and utility_kind("docs/tutorial-basics/index.html", own) is None
    tag = (site / "tags/hola/index.html").read_text(encoding="utf-8")
    assert utility_kind("tags/hola/index.html", tag) == "taxonomy index"
    assert utility_kind("docs/index.html", index.replace("td-main", "x")) is None
