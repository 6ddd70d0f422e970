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
meta, Docsy's ``<body class="td-section">`` (it names the Hugo kind there). A list page's
feed is its own, in its own folder (``/posts/`` links ``/posts/index.xml``); a theme that
links the site's feed from every page links one in another folder, so a page that names its
own address (``og:url`` or ``rel=canonical``) and links only other folders' feeds is no list,
whatever its headings link to (a page whose section headings link to the pages they
summarise would otherwise lose those sections, or be left out whole).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlparse

from .html_reader import HtmlBlock, HtmlPage, own_blocks, read_html

HEAD = 4096  # a page's <meta> and <link> tags are in its first few kilobytes
_Q = "[\"']?"  # minified HTML (Docusaurus) leaves attribute values unquoted


def generator_meta(name: str) -> re.Pattern[str]:
    """The ``<meta name="generator">`` a generator writes into each of its pages."""
    return re.compile(rf"<meta\s+name={_Q}generator{_Q}\s+content={_Q}{name}", re.I)


def tag_classes(tag: str, content: str) -> set[str]:
    """The classes of the first ``<tag>`` of a page (a theme names the page's kind there)."""
    found = re.search(rf"<{tag}\b[^>]*?\sclass=(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", content, re.I)
    return set("".join(found.groups(default="")).split()) if found else set()


HUGO_META = generator_meta("Hugo")
_FEED = re.compile(rf"<link\s[^>]*type={_Q}application/(?:rss|atom)(?:\+|&#43;)xml", re.I)
_HEAD_TAG = re.compile(r"<(?:link|meta)\s[^>]*>", re.I)
_ATTRIBUTE = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
# A class attribute inside a tag: HTML text needs no escaping for "=", so a page's prose
# may say "class=td-main" and must not be read as markup.
IN_A_TAG = r"<[a-zA-Z][^<>]*\s"  # a tag's name and any attributes before the one sought
DOCSY_MAIN = re.compile(rf"{IN_A_TAG}class=[\"']?td-main\b")
_DOCSY_LISTS = frozenset({"section-index", "td-blog-posts"})


def own_text(content: str, page: HtmlPage | None = None) -> tuple[HtmlBlock, ...] | None:
    """A Hugo list page's blocks without its list of other pages; None when the page is
    not a list page or lists nothing (then it is read as any page). ``page``: the page as
    read_html already read it, when the caller has it."""
    head = content[:HEAD]
    if DOCSY_MAIN.search(content) and "td-section" in tag_classes("body", content):
        blocks = (page or read_html(content)).blocks
        # Docsy marks the list it generates (its classes): the page's own text is the rest,
        # whatever its headings link to.
        own = read_html(content, _DOCSY_LISTS).blocks
    elif HUGO_META.search(head) and _FEED.search(head) and not _feeds_elsewhere(head):
        blocks = (page or read_html(content)).blocks
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


def _feeds_elsewhere(head: str) -> bool:
    """Whether the page names its own address and every feed it links is in another folder."""
    own: str | None = None
    feeds: list[str] = []
    for tag in _HEAD_TAG.findall(head):
        attributes = {m[1].lower(): m[2] or m[3] or m[4] for m in _ATTRIBUTE.finditer(tag)}
        if attributes.get("property") == "og:url" or attributes.get("rel") == "canonical":
            own = attributes.get("content") or attributes.get("href") or own
        elif _FEED.match(tag):
            feeds.append(attributes.get("href", ""))
    if own is None or not feeds:
        return False
    # A relative href (Hugo's relativeURLs) is read from the page's own address.
    return all(_folder(urljoin(own, feed)) != _folder(own) for feed in feeds)


def _folder(address: str) -> str:
    path = urlparse(address).path
    return path[: path.rfind("/") + 1]
