"""Site pages -> a flat list of blocks (headings and text), for Markdown and HTML alike.

Both formats become the same `Block` list, so chunking has one code path. A page's URL
path comes from its file path and the permalink setting (`page_path`): ``posts/waf.md``
-> ``/posts/waf.html`` (file) or ``/posts/waf`` (pretty).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .html_reader import read_html
from .list_pages import has_text, own_text

MARKDOWN_SUFFIXES = (".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
PAGE_SUFFIXES = MARKDOWN_SUFFIXES + HTML_SUFFIXES

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Block:
    level: int  # 1-6 for a heading, 0 for body text
    text: str
    # A heading's id on an HTML page, for links to the section ("" for Markdown, whose
    # anchors are the heading's slug). Not part of equality: the text is the block.
    anchor: str = field(default="", compare=False)
    # A Doxygen member's title (html_reader.DOXYGEN_MEMBER_TITLE): its section is never
    # merged with a neighbour (chunking.py).
    member: bool = field(default=False, compare=False)
    # Body text's links as written, (href, text) (html_reader.HtmlBlock.links).
    links: tuple[tuple[str, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Page:
    source: str  # relative POSIX path inside the site directory
    path: str  # URL path
    title: str
    blocks: tuple[Block, ...]
    # Every fragment an HTML page can be linked to (its ids and a[name]): a link to it is
    # kept only when its anchor is one of these (build.resolve_links).
    ids: frozenset[str] = field(default=frozenset(), compare=False)


PERMALINKS = ("file", "pretty")


def page_path(relative: str, permalinks: str = "file") -> str:
    """URL path of a page file, as the host that serves the built site links it.

    "file" (the default) keeps the file's name, a Markdown source becoming the `.html`
    a static site generator writes for it (Jekyll's pages, Hugo with `uglyURLs`):
    `hours.html` -> `/hours.html`, `posts/waf.md` -> `/posts/waf.html`, `index.md` ->
    `/index.html`. Those paths name real objects, so a plain S3 bucket or a CloudFront
    distribution serves them with no rewrite rule. "pretty" drops the suffix and
    `index` (`/posts/waf`, `/guides`, `/`), for hosts that map such a path to its file
    (GitHub Pages, Netlify, Cloudflare Pages, a CloudFront function).
    """
    path = PurePosixPath(relative)
    if permalinks == "pretty":
        parts = list(path.with_suffix("").parts)
        if parts and parts[-1] == "index":
            parts.pop()
        return "/" + "/".join(parts)
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        path = path.with_suffix(".html")
    return "/" + path.as_posix()


def parse_page(relative: str, content: str, permalinks: str = "file") -> Page:
    ids: frozenset[str] = frozenset()
    if relative.lower().endswith(HTML_SUFFIXES):
        title, blocks, ids = parse_html_page(content)
    else:
        meta, body = split_front_matter(content)
        title, blocks = meta.get("title", ""), parse_markdown(body)
        if meta.get("description"):  # the page's one-line summary is what it is about
            blocks.insert(0, Block(0, meta["description"]))
    if not title:
        title = next((b.text for b in blocks if b.level == 1), "") or _title_from(relative)
    return Page(relative, page_path(relative, permalinks), title, tuple(blocks), ids)


def split_front_matter(content: str) -> tuple[dict[str, str], str]:
    """A leading `---` ... `---` block of `key: value` lines (the YAML subset sites use)."""
    lines = content.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, content
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            meta = {}
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep and key.strip() and not key.startswith((" ", "\t", "#")):
                    meta[key.strip().lower()] = value.strip().strip("\"'")
            return meta, "\n".join(lines[end + 1 :])
    return {}, content  # an unclosed fence is content, not metadata


def parse_markdown(body: str) -> list[Block]:
    """Headings (ATX `#`) and paragraphs; `#` lines inside fenced code stay code."""
    blocks: list[Block] = []
    buffer: list[str] = []
    fence = ""
    for line in _COMMENT.sub("", body).splitlines():
        marker = _FENCE.match(line)
        if fence:
            if marker and _closes(marker.group(1), fence):
                fence = ""
            buffer.append(line)
            continue
        if marker:
            fence = marker.group(1)
            buffer.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            _flush(buffer, blocks)
            blocks.append(Block(len(heading.group(1)), heading.group(2).strip()))
        else:
            buffer.append(line.rstrip())
    _flush(buffer, blocks)
    return blocks


def _closes(marker: str, fence: str) -> bool:
    """A fence closes with the same character, at least as long as the opening one."""
    return marker[0] == fence[0] and len(marker) >= len(fence)


def _flush(buffer: list[str], blocks: list[Block]) -> None:
    text = "\n".join(buffer).strip("\n")
    if text.strip():
        blocks.append(Block(0, re.sub(r"\n{3,}", "\n\n", text)))
    buffer.clear()


def parse_html(content: str) -> tuple[str, list[Block]]:
    """The page's title and blocks as a reader sees them (html_reader.py: chrome dropped,
    headings clean, each with the anchor the page gives it)."""
    title, blocks, _ = parse_html_page(content)
    return title, blocks


def parse_html_page(content: str) -> tuple[str, list[Block], frozenset[str]]:
    """parse_html, and every fragment the page can be linked to."""
    page = read_html(content)
    own = own_text(content, page)  # a Hugo list page with text of its own: that text alone
    blocks = own if own is not None and has_text(own) else page.blocks
    return (
        page.title,
        [Block(b.level, b.text, b.anchor, b.member, b.links) for b in blocks],
        page.ids,
    )


def _title_from(relative: str) -> str:
    stem = PurePosixPath(relative).stem
    if stem == "index":
        stem = PurePosixPath(relative).parent.name or "Home"
    return stem.replace("-", " ").replace("_", " ").strip().capitalize() or "Home"
