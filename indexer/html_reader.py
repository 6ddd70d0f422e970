"""HTML -> the headings and text a reader of the page sees, without the site's chrome.

A built documentation page carries, around its content, the site's chrome: menus, a
sidebar, breadcrumbs, a search box, previous/next links, a copyright footer, and a
permalink sign (``¶``, ``#``, ``◆``) in every heading. Indexed as text, that chrome
becomes sections of its own ("... > Navigation"), quoted as answers and linked to anchors
the page does not have. It is dropped here by what it is, in this order:

1. **Semantics.** The ARIA landmark roles of chrome (``navigation``, ``search``,
   ``contentinfo``, ``banner``, ``complementary``; the roles are defined by WAI-ARIA 1.2,
   https://www.w3.org/TR/wai-aria-1.2/#landmark_roles), the elements HTML gives those
   roles implicitly (``nav``, ``aside``, a ``header`` or ``footer`` that is not inside
   the content), and what is not text (``script``, ``style``, ``form``, ``button``...).
   When the page marks its content (``<main>`` or ``role="main"``), only that is read.
2. **What the common generators emit** where they use plain ``div``s with class names:
   Sphinx (its basic theme, Read the Docs, Alabaster), MkDocs (its Bootstrap themes and
   Material), Docusaurus, Hugo (Docsy, Book), Jekyll (minima, Just the Docs), Doxygen.
   All were read from real output: tests/data/real_pages/<generator>/ keeps pages of
   each, with their source.

Each heading keeps the anchor the page gives it, so a link to the section lands on it:
the heading's own ``id``; else the target of its permalink (``<a class="headerlink"
href="#x">``); else an ``<a id|name>`` inside or just before it (Doxygen); else the ``id``
of the element that opened just before it with no text between (Sphinx's ``<section
id="x">``). A heading with none of those has no anchor ("").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

# Elements with no end tag: never pushed on the open-element stack.
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# Not text a reader reads as the page's content.
_NOT_TEXT = frozenset(
    [
        "script",
        "style",
        "template",
        "noscript",
        "form",
        "button",
        "select",
        "textarea",
        "svg",
        "iframe",
        "object",
    ]
)
_CHROME_TAGS = frozenset({"nav", "aside"})
_PAGE_LEVEL_ONLY = frozenset({"header", "footer"})  # chrome unless inside the content
_CONTENT_TAGS = frozenset({"main", "article", "section"})
CHROME_ROLES = frozenset({"navigation", "search", "contentinfo", "banner", "complementary"})

# Class names of chrome, by generator (each seen in that generator's output).
CHROME_CLASSES = frozenset(
    {
        # Sphinx basic/Alabaster/Pallets themes, and sphinx_rtd_theme
        "sphinxsidebar", "related", "footer", "rst-footer-buttons", "wy-nav-side",
        "wy-breadcrumbs", "wy-nav-top", "rst-versions",
        # MkDocs' own Bootstrap themes: the navbar, the sidebar, the search/keyboard dialogs
        "navbar", "bs-sidebar", "modal",
        # Material for MkDocs
        "md-header", "md-tabs", "md-sidebar", "md-footer", "md-search", "md-source",
        "md-content__button", "md-skip", "md-top", "md-dialog", "md-banner",
        # Docusaurus (its classic theme's stable ThemeClassNames; pagination-nav and
        # hash-link are Infima's and the theme's own)
        "theme-layout-navbar", "theme-layout-footer", "theme-announcement-bar",
        "theme-doc-sidebar-container", "pagination-nav", "theme-doc-toc-desktop",
        "theme-doc-toc-mobile", "theme-doc-breadcrumbs", "theme-doc-footer",
        "theme-doc-version-banner", "theme-doc-version-badge", "theme-blog-footer-tags-row",
        "theme-blog-footer-edit-meta-row", "theme-pages-footer-edit-meta-row",
        "theme-edit-this-page", "theme-last-updated", "theme-back-to-top-button", "hash-link",
        # Hugo: Docsy (and the tags row of its blog posts) and Book themes
        "td-navbar", "td-sidebar", "td-sidebar-toc", "td-footer", "td-page-meta",
        "td-heading-self-link", "taxonomy-terms-article", "book-menu", "book-toc",
        "book-header", "book-footer",
        # Jekyll: minima and Just the Docs
        "site-header", "site-footer", "site-nav", "side-bar", "main-header",
        "anchor-heading", "rss-subscribe", "skip-to-main",
        # Doxygen
        "navpath", "tabs", "tabs2", "tabs3", "navrow", "summary", "permalink", "ingroups",
        "headertitle",
        # Permalink anchors in headings (Sphinx, MkDocs, Material, Python-Markdown toc)
        "headerlink",
    }
)  # fmt: skip
# A heading of these classes titles an in-page or child-page table of contents: Just the
# Docs writes its children list under <h2 class="text-delta">, and its docs ask authors to
# class their "Table of contents" heading so.
CHROME_HEADING_CLASSES = frozenset({"text-delta"})
CHROME_IDS = frozenset(
    {
        "markdown-toc",  # kramdown's {:toc} (Jekyll's Markdown): the page's own headings
        "searchbox", "ethical-ad-placement",  # Sphinx
        "titlearea", "main-nav", "MSearchSelectWindow", "MSearchResultsWindow", "nav-path",
        "navrow1", "navrow2", "side-nav",  # Doxygen
    }
)  # fmt: skip
# The signs a permalink anchor shows, left at a heading's end when it has no class; an icon
# font's glyph is a private-use code point (MkDocs' theme shows Font Awesome's U+F0C1).
_PERMALINK_SIGNS = re.compile(r"[\s\u00b6#\u00a7\u25c6\u200b\ufeff\ue000-\uf8ff\U0001f517]+$")
_BREAKS = frozenset(
    [
        "p",
        "li",
        "div",
        "section",
        "article",
        "main",
        "br",
        "tr",
        "blockquote",
        "dd",
        "dt",
        "table",
        "ul",
        "ol",
        "dl",
        "figure",
    ]
)
_HEADING = re.compile(r"h[1-6]")
# Doxygen (1.8.13 and later) titles each documented member (a macro, function, typedef,
# field) with <h2 class="memtitle">, its prototype and text in the <div class="memitem">
# after it: one member per section. The class is Doxygen's own, so no other generator's
# page is read differently (chunking.py keeps such a section whole and alone).
DOXYGEN_MEMBER_TITLE = "memtitle"
_MARKDOWN_SIGNS = re.compile(r"([\\`*_\[\]<>&!#|~])")


@dataclass(frozen=True, slots=True)
class HtmlBlock:
    level: int  # 1-6 for a heading, 0 for body text
    text: str  # Markdown: prose escaped (markdown_literal), list items "- ", code fenced
    anchor: str = ""  # a heading's id on the page ("" when it has none)
    links_away: bool = False  # a heading whose text is all a link to another page
    member: bool = False  # a Doxygen member's own title (its one macro, function, field...)
    # Body text's links as written: (href, the link's text), in page order. The build keeps
    # those to another indexed page's anchor (build.resolve_links).
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class HtmlPage:
    title: str
    blocks: tuple[HtmlBlock, ...]
    ids: frozenset[str]  # every fragment the page can be linked to (id and a[name])


def read_html(content: str, drop_classes: frozenset[str] = frozenset()) -> HtmlPage:
    """The page as a reader sees it; `drop_classes` also drops the elements of those classes
    (utility.py asks what a list page says without the list a theme generated)."""
    reader = _Reader(drop_classes)
    reader.feed(content)
    reader.close()
    reader.end_paragraph()
    blocks = reader.main_blocks if reader.saw_main else reader.all_blocks
    return HtmlPage(" ".join(reader.title.split()), tuple(blocks), frozenset(reader.ids))


def own_blocks(blocks: tuple[HtmlBlock, ...]) -> tuple[HtmlBlock, ...]:
    """The blocks without the summaries of other pages: a section whose heading is only a
    link to another page (a list page's "<h2><a href=post>Title</a></h2>" and the post's
    summary below it, down to the next heading of its level or higher)."""
    kept: list[HtmlBlock] = []
    summary_level = 0  # the level of the summary being dropped (0: none)
    for block in blocks:
        if block.level and summary_level and block.level <= summary_level:
            summary_level = 0
        if block.links_away and not summary_level:
            summary_level = block.level
        if not summary_level:
            kept.append(block)
    return tuple(kept)


def is_chrome(tag: str, attrs: dict[str, str], inside_content: bool) -> bool:
    """Whether an element is chrome by its tag, role, id or class (see the module docstring)."""
    if tag in _NOT_TEXT or tag in _CHROME_TAGS:
        return True
    if tag in _PAGE_LEVEL_ONLY and not inside_content:
        return True
    if attrs.get("role", "").strip().lower() in CHROME_ROLES:
        return True
    if attrs.get("id", "") in CHROME_IDS:
        return True
    classes = attrs.get("class", "").split()
    if _HEADING.fullmatch(tag) and not CHROME_HEADING_CLASSES.isdisjoint(classes):
        return True
    return not CHROME_CLASSES.isdisjoint(classes)


def markdown_literal(text: str) -> str:
    """Text that Markdown reads back as itself: the blocks are Markdown (a list item is
    "- item", code is fenced), so `C:\\Python38\\`, `<!--nav-->` or `__init__` in a page's
    prose must not become a line break, a comment or emphasis when chunking renders it."""
    return _MARKDOWN_SIGNS.sub(r"\\\1", text)


def clean_heading(text: str) -> str:
    """A heading's text on one line, without a trailing permalink sign."""
    return _PERMALINK_SIGNS.sub("", " ".join(text.split())).strip()


class _Reader(HTMLParser):
    """One pass: a stack of open elements says what is chrome and what is content."""

    def __init__(self, drop_classes: frozenset[str] = frozenset()) -> None:
        super().__init__(convert_charrefs=True)
        self._drop_classes = drop_classes
        self.title = ""
        self.ids: set[str] = set()
        self.all_blocks: list[HtmlBlock] = []
        self.main_blocks: list[HtmlBlock] = []
        self.saw_main = False
        self._stack: list[str] = []
        self._skip_at = 0  # stack depth of the chrome element being skipped (0: none)
        self._main_at = 0  # stack depth of the open <main> (0: not inside one)
        self._content_depth = 0  # open main/article/section elements
        self._in_title = False
        self._heading = 0
        self._heading_anchor = ""
        self._heading_member = False
        self._heading_link_at = 0  # stack depth of an open <a href> to another page in it
        self._heading_text = [False, False]  # text seen [outside, inside] such a link
        self._pending_id = ""  # the id of the last element opened with no text since
        self._link_at = 0  # stack depth of an open <a href> in body text (0: none)
        self._link_href = ""
        self._link_text: list[str] = []
        self._links: list[tuple[str, str]] = []  # the links of the block being read
        self._text: list[str] = []
        self._paragraphs: list[str] = []
        self._pre = 0

    # --- element structure -------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self._note_ids(tag, values)
        if tag == "body" and "head" in self._stack:
            # Minified pages (Just the Docs) omit </head>, which <body> ends implicitly.
            del self._stack[self._stack.index("head") :]
        if tag == "title" and "body" not in self._stack:
            self._in_title = True
        if tag in _VOID:
            if tag == "br" and not self._skip_at:
                self._text.append("\n" if self._pre else " ")
            return
        self._stack.append(tag)
        depth = len(self._stack)
        if self._skip_at:
            return
        if is_chrome(tag, values, self._content_depth > 0) or not self._drop_classes.isdisjoint(
            values.get("class", "").split()
        ):
            self._skip_at = depth
            self._take_permalink(values)
            return
        if tag == "main" or values.get("role", "").lower() == "main":
            self.end_paragraph()
            self.saw_main = True
            self._main_at = self._main_at or depth
        if tag in _CONTENT_TAGS:
            self._content_depth += 1
        self._open(tag, values)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag not in self._stack:
            return  # a stray end tag: nothing to close
        while self._stack:
            open_tag = self._stack.pop()
            depth = len(self._stack) + 1
            if depth == self._skip_at:
                self._skip_at = 0
            elif not self._skip_at:
                self._close(open_tag, depth)
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if data.strip() and self._heading and not self._skip_at:
            self._heading_text[bool(self._heading_link_at)] = True
        if data.strip() and self._stack[-1:] not in (["script"], ["style"], ["template"]):
            # Text between an id and a heading, even chrome's (Docusaurus's sidebar and
            # breadcrumbs between its content wrapper's id and the page's <h1>), means
            # the id is not the heading's; a script's code is no text a reader sees.
            self._pending_id = ""
        if self._skip_at or "head" in self._stack:
            return
        if self._link_at:
            self._link_text.append(data)
        self._text.append(data)

    # --- what each element does to the text --------------------------------------------

    def _open(self, tag: str, values: dict[str, str]) -> None:
        if _HEADING.fullmatch(tag):
            self.end_paragraph()
            self._heading = int(tag[1])
            self._heading_anchor = values.get("id", "") or self._pending_id
            self._heading_text = [False, False]
            self._heading_member = DOXYGEN_MEMBER_TITLE in values.get("class", "").split()
        elif tag == "a" and self._heading:
            if not self._heading_anchor:
                self._heading_anchor = values.get("id", "") or values.get("name", "")
            if values.get("href", "#")[:1] not in ("#", ""):
                self._heading_link_at = len(self._stack)
        elif tag == "a" and values.get("href") and not self._link_at:
            self._link_at, self._link_href, self._link_text = len(self._stack), values["href"], []
        elif tag == "pre":
            self._close_text()
            self._pre += 1
        elif tag in _BREAKS and not self._pre:
            self._close_text()
            if tag == "li":
                self._text.append("- ")
        elif tag in ("td", "th"):
            self._text.append(" ")
        anchor = values.get("id", "") or (values.get("name", "") if tag == "a" else "")
        if anchor:
            self._pending_id = anchor

    def _close(self, tag: str, depth: int) -> None:
        if tag in _CONTENT_TAGS and self._content_depth:
            self._content_depth -= 1
        if self._heading and tag == f"h{self._heading}":
            heading = markdown_literal(clean_heading("".join(self._text)))
            self._text.clear()
            outside, inside = self._heading_text
            if heading:
                self._add(
                    HtmlBlock(
                        self._heading,
                        heading,
                        self._heading_anchor,
                        inside > outside,
                        self._heading_member,
                    )
                )
            self._heading, self._heading_anchor, self._pending_id = 0, "", ""
            self._heading_link_at = 0
        elif tag == "a" and depth == self._heading_link_at:
            self._heading_link_at = 0
        elif tag == "a" and depth == self._link_at:
            self._link_at = 0
            text = " ".join("".join(self._link_text).split())
            if text:
                self._links.append((self._link_href, text))
        elif tag == "pre":
            self._pre = max(self._pre - 1, 0)
            code = "".join(self._text).strip("\n")
            self._text.clear()
            if code.strip():
                self._paragraphs.append("```\n" + code + "\n```")
        elif tag in _BREAKS and not self._pre:
            self._close_text()
        if depth == self._main_at:
            self.end_paragraph()
            self._main_at = 0

    def _take_permalink(self, values: dict[str, str]) -> None:
        """A skipped permalink inside a heading still says the heading's anchor."""
        href = values.get("href", "")
        if self._heading and not self._heading_anchor and href.startswith("#") and href != "#":
            self._heading_anchor = href[1:]

    def _note_ids(self, tag: str, values: dict[str, str]) -> None:
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.ids.add(values[name])

    # --- blocks ------------------------------------------------------------------------

    def _add(self, block: HtmlBlock) -> None:
        self.all_blocks.append(block)
        if self._main_at:
            self.main_blocks.append(block)

    def _close_text(self) -> None:
        text = markdown_literal(" ".join("".join(self._text).split()))
        self._text.clear()
        if text and text != "-":
            self._paragraphs.append(text)

    def end_paragraph(self) -> None:
        self._close_text()
        if self._paragraphs:
            links = tuple(self._links)
            self._add(HtmlBlock(0, "\n\n".join(self._paragraphs), links=links))
            self._paragraphs.clear()
            self._links.clear()
