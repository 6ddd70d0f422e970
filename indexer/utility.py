"""A generator's utility pages: built for browsing the site, not to be read as content.

A documentation generator writes, beside the pages of the site, pages that list or find
the others: Sphinx's general index (``genindex.html``) and module index
(``py-modindex.html``), the search page every generator has, the 404 page, Doxygen's
member and file indexes, Hugo's tag and category pages, and redirect stubs left where a
page moved. Indexed, they answer
questions with lists of names ("Index > _ : next() ... _fail_with_undefined_error() ...")
and outrank the page that explains the thing. The build leaves them out by default and
says which (indexer/cli.py); ``--keep-utility-pages`` or cdk.json "chatguard/index"
``keep_utility_pages`` keeps them.

A page is one by its file name where the name is the generator's convention and means
nothing else (``genindex.html``), or by what the page says it is (its generator's
``<meta name="generator">``, a ``<meta http-equiv="refresh">`` redirect).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from .pages import HTML_SUFFIXES

# File names that are a utility page on any site (Sphinx, MkDocs, Jekyll, Docusaurus...).
_ANY_SITE = (
    ("genindex.html", "general index"),
    ("genindex-*.html", "general index"),  # Sphinx's index split by letter
    ("*-modindex.html", "module index"),  # py-modindex.html and other domains'
    ("search.html", "search page"),
    ("404.html", "404 page"),
)
# Doxygen's generated indexes, recognised only on a page Doxygen wrote.
_DOXYGEN = (
    ("globals*.html", "member index"),
    ("functions*.html", "member index"),
    ("namespacemembers*.html", "member index"),
    ("*_source.html", "source listing"),
    ("files.html", "file index"),
    ("annotated.html", "class index"),
    ("classes.html", "class index"),
    ("hierarchy.html", "class index"),
    ("modules.html", "module index"),
    ("pages.html", "page index"),
)
# Hugo's default taxonomies: their pages list the posts that carry a tag or category.
_HUGO_TAXONOMIES = frozenset({"tags", "categories"})
_HEAD = 4096  # a page's <meta> tags are in its first few kilobytes
_DOXYGEN_META = re.compile(r"<meta\s+name=[\"']generator[\"']\s+content=[\"']Doxygen", re.I)
_REFRESH = re.compile(r"<meta\s+http-equiv=[\"']refresh[\"']", re.I)
_HUGO_META = re.compile(r"<meta\s+name=[\"']generator[\"']\s+content=[\"']Hugo", re.I)


def utility_kind(relative: str, content: str) -> str | None:
    """What kind of utility page the file at `relative` is, or None for a content page."""
    if not relative.lower().endswith(HTML_SUFFIXES):
        return None
    name = PurePosixPath(relative).name.lower()
    for pattern, kind in _ANY_SITE:
        if fnmatchcase(name, pattern):
            return kind
    head = content[:_HEAD]
    if _REFRESH.search(head):
        return "redirect"
    parts = PurePosixPath(relative.lower()).parts
    if _HUGO_META.search(head) and parts[0] in _HUGO_TAXONOMIES:
        return "taxonomy index"
    if _DOXYGEN_META.search(head):
        if "search" in parts[:-1]:
            return "search page"  # the search box's result frames
        for pattern, kind in _DOXYGEN:
            if fnmatchcase(name, pattern):
                return kind
    return None
