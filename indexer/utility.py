"""A generator's utility pages: built for browsing the site, not to be read as content.

A documentation generator writes, beside the pages of the site, pages that list or find
the others: Sphinx's general index (``genindex.html``) and module index
(``py-modindex.html``), the search page every generator has and the 404 page (at the
site's root), Doxygen's member and file indexes, Hugo's tag and category pages, and
redirect stubs left where a page moved. Indexed, they answer questions with lists of
names ("Index > _ : next() ... _fail_with_undefined_error() ...") and outrank the page
that explains the thing. The build leaves them out by default and says which
(indexer/cli.py); ``--keep-utility-pages`` or cdk.json "chatguard/index"
``keep_utility_pages`` keeps them.

A page is one by its file name where the name is the generator's convention and means
nothing else (``genindex.html``), or by what the page says it is (its generator's
``<meta name="generator">``, a ``<meta http-equiv="refresh">`` redirect, the page-type
class Docusaurus puts on ``<html>``, the markup Sphinx's viewcode extension writes).

Lists of other pages are left out for the same reason: a Docusaurus blog's list of posts,
its archive, tag and author pages, a docs category's generated index, and a Hugo section's
list of posts or pages when it has no text of its own (list_pages.py) hold the posts' and
pages' own summaries, so a question finds the summary instead of the page.

Sphinx's viewcode extension (https://www.sphinx-doc.org/en/master/usage/extensions/viewcode.html)
writes a highlighted copy of each documented module's source under ``_modules/`` and an
index of them: code with no prose, whose identifiers match questions word for word and
outrank the page that explains them.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from .list_pages import (
    DOCSY_MAIN,
    HEAD,
    HUGO_META,
    IN_A_TAG,
    generator_meta,
    has_text,
    own_text,
    tag_classes,
)
from .pages import HTML_SUFFIXES

# File names that are a utility page on any site (Sphinx, MkDocs, Jekyll, Docusaurus...).
_ANY_SITE = (
    ("genindex.html", "general index"),
    ("genindex-*.html", "general index"),  # Sphinx's index split by letter
    ("*-modindex.html", "module index"),  # py-modindex.html and other domains'
)
# Names that are a utility page only at the site's root, where generators write them: below
# it they are a content page's ("api/search.html" documenting a search() call).
_SITE_ROOT = (
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
_Q = "[\"']?"  # minified HTML (Docusaurus) leaves attribute values unquoted
_DOXYGEN_META = generator_meta("Doxygen")
_DOCUSAURUS_META = generator_meta("Docusaurus")
# A redirect stub names where to go ("0; url=new.html"); a refresh with no URL reloads a
# content page (a status page's "60") and is no redirect.
_REFRESH = re.compile(
    rf"<meta\s+http-equiv={_Q}refresh{_Q}\s+content={_Q}[\d.]*\s*[;,]\s*url=", re.I
)
# A refresh inside <noscript> sends visitors without JavaScript elsewhere: a site may put
# one on every page, each of which is content.
_NOSCRIPT = re.compile(r"<noscript\b.*?</noscript\s*>", re.I | re.S)
# Docusaurus's page-type classes on <html> (ThemeClassNames.page in @docusaurus/theme-common)
# for lists of other pages; a blog archive has none, so any blog page but a post is one.
_DOCUSAURUS_TAG_PAGES = frozenset({"docs-tags-list-page", "docs-tags-doc-list-page"})
# The generated index of a docs category: its CSS module's class, "<local name>_<hash>".
_DOCUSAURUS_CATEGORY = re.compile(rf"{IN_A_TAG}class=[\"']?generatedIndexPage_")
# What Sphinx's viewcode extension writes around each documented object in a module's source
# (a "[docs]" link back), and what every Sphinx page loads (for the module index page).
_VIEWCODE = re.compile(rf"{IN_A_TAG}class=[\"']?viewcode-(?:block|back)\b")
_SPHINX_PAGE = re.compile(r"_static/documentation_options\.js")


def utility_kind(relative: str, content: str) -> str | None:
    """What kind of utility page the file at `relative` is, or None for a content page."""
    if not relative.lower().endswith(HTML_SUFFIXES):
        return None
    name = PurePosixPath(relative).name.lower()
    at_root = len(PurePosixPath(relative).parts) == 1
    for pattern, kind in _ANY_SITE + (_SITE_ROOT if at_root else ()):
        if fnmatchcase(name, pattern):
            return kind
    head = content[:HEAD]
    if _REFRESH.search(_NOSCRIPT.sub("", head)):
        return "redirect"
    parts = PurePosixPath(relative.lower()).parts
    if _hugo_taxonomy(head, content, parts[0]):
        return "taxonomy index"
    own = own_text(content)  # a Hugo section's list page (list_pages.py)
    if own is not None and not has_text(own):
        return "list of pages"  # each post's or page's summary, nothing of its own
    if _DOXYGEN_META.search(head):
        return _doxygen_kind(name, parts)
    if _DOCUSAURUS_META.search(head):
        return _docusaurus_kind(head, content)
    if "_modules" in parts[:-1] and (_VIEWCODE.search(content) or _SPHINX_PAGE.search(head)):
        return "source listing"  # Sphinx viewcode's fixed folder, on a page Sphinx wrote
    return None


def _hugo_taxonomy(head: str, content: str, folder: str) -> bool:
    """A tag or category page: under Hugo's default taxonomy folders, or one Docsy names
    so (its <body class> says the Hugo kind: td-taxonomy, td-term)."""
    if HUGO_META.search(head) and folder in _HUGO_TAXONOMIES:
        return True
    docsy = DOCSY_MAIN.search(content) is not None
    return docsy and not tag_classes("body", content).isdisjoint({"td-taxonomy", "td-term"})


def _doxygen_kind(name: str, parts: tuple[str, ...]) -> str | None:
    if "search" in parts[:-1]:
        return "search page"  # the search box's result frames
    # Doxygen names a file's own pages after the file, "." written "_8" (globals.h:
    # globals_8h.html, a content page that "globals*.html" would take for the member index;
    # globals_8h_source.html, its source listing).
    of_a_file = "_8" in name
    for pattern, kind in _DOXYGEN:
        if fnmatchcase(name, pattern) and (kind == "source listing" or not of_a_file):
            return kind
    return None


def _docusaurus_kind(head: str, content: str) -> str | None:
    classes = tag_classes("html", head)
    if "plugin-blog" in classes and "blog-post-page" not in classes:
        return "list of posts"  # the blog's list, archive, tag and author pages
    if not classes.isdisjoint(_DOCUSAURUS_TAG_PAGES):
        return "tag index"
    if _DOCUSAURUS_CATEGORY.search(content):
        return "category index"
    return None
