"""A Hugo section's list page: what it says itself, apart from its list of other pages.

Hugo renders a section (and the home page) with a list template: the section's own text,
if it has any, then a summary of each of its posts or pages, each headed by a link to it
(Hugo Book), or a list the theme generates (Docsy's ``section-index`` and
``td-blog-posts``). A summary repeats the opening of the page it links to; indexed, a
question finds the summary instead of the page. So:

- a list page with nothing of its own is a utility page (utility.py leaves it out,
  ``--keep-utility-pages`` keeps it whole);
- a list page with text of its own is indexed as that text alone (pages.py).

A page is a list page by what Hugo writes: its generator meta and a feed link (Hugo gives
its list kinds, home, section, taxonomy and term, an RSS output by default and single
pages none: https://gohugo.io/configuration/outputs/), or, as Docsy writes no generator
meta, Docsy's ``<body class="td-section">`` (it names the Hugo kind there).
"""

from __future__ import annotations

import re

from .html_reader import HtmlBlock, own_blocks, read_html

_HEAD = 4096  # a page's <meta> and <link> tags are in its first few kilobytes
_Q = "[\"']?"  # minified HTML leaves attribute values unquoted
HUGO_META = re.compile(rf"<meta\s+name={_Q}generator{_Q}\s+content={_Q}Hugo", re.I)
_FEED = re.compile(rf"<link\s[^>]*type={_Q}application/(?:rss|atom)(?:\+|&#43;)xml", re.I)
_BODY_CLASS = re.compile(r"<body\b[^>]*?\sclass=(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", re.I)
DOCSY_MAIN = re.compile(r"class=[\"']?td-main\b")
_DOCSY_LISTS = frozenset({"section-index", "td-blog-posts"})


def body_classes(content: str) -> set[str]:
    found = _BODY_CLASS.search(content)
    return set("".join(found.groups(default="")).split()) if found else set()


def own_text(content: str) -> tuple[HtmlBlock, ...] | None:
    """A Hugo list page's blocks without its list of other pages; None when the page is
    not a list page or lists nothing (then it is read as any page)."""
    head = content[:_HEAD]
    if DOCSY_MAIN.search(content) and "td-section" in body_classes(content):
        blocks = read_html(content).blocks
        own = own_blocks(read_html(content, _DOCSY_LISTS).blocks)
    elif HUGO_META.search(head) and _FEED.search(head):
        blocks = read_html(content).blocks
        own = own_blocks(blocks)
        # A theme may link the site's feed from every page: a post with one heading that
        # links elsewhere is no list.
        if sum(block.links_away for block in blocks) < 2:
            return None
    else:
        return None
    return own if len(own) < len(blocks) else None


def has_text(blocks: tuple[HtmlBlock, ...]) -> bool:
    """Whether blocks hold text, not only headings (a list page's title alone is none)."""
    return any(block.level == 0 for block in blocks)
