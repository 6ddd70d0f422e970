"""The HTML reader the indexer had before issue 28 (indexer/pages.py at ed5a33f), kept
verbatim as the baseline `make bench-chrome` compares with: it skipped `script`, `style`,
`nav`, `footer`, `header`, `template` and `noscript` elements and kept every other text,
permalink signs included. Not used by the indexer."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from indexer.pages import Block

_HTML_HEADING = re.compile(r"h[1-6]")


def legacy_parse_html(content: str) -> tuple[str, list[Block]]:
    parser = _HtmlBlocks()
    parser.feed(content)
    parser.close()
    parser.end_paragraph()
    return parser.title.strip(), parser.blocks


class _HtmlBlocks(HTMLParser):
    """Headings h1-h6, paragraphs, list items and <pre> blocks; chrome is skipped."""

    _SKIP = frozenset({"script", "style", "nav", "footer", "header", "template", "noscript"})
    _BREAKS = frozenset(
        {
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
        }
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.blocks: list[Block] = []
        self._text: list[str] = []
        self._paragraphs: list[str] = []
        self._skip = 0
        self._in_title = False
        self._heading = 0
        self._pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif _HTML_HEADING.fullmatch(tag):
            self.end_paragraph()
            self._heading = int(tag[1])
        elif tag == "pre":
            self._close_text()
            self._pre = True
        elif tag in self._BREAKS:
            self._close_text()
            if tag == "li":
                self._text.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(self._skip - 1, 0)
        elif tag == "title":
            self._in_title = False
        elif self._heading and tag == f"h{self._heading}":
            heading = " ".join("".join(self._text).split())
            self._text.clear()
            if heading:
                self.blocks.append(Block(self._heading, heading))
            self._heading = 0
        elif tag == "pre":
            self._paragraphs.append("```\n" + "".join(self._text).strip("\n") + "\n```")
            self._text.clear()
            self._pre = False
        elif tag in self._BREAKS:
            self._close_text()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title += data
        else:
            self._text.append(data)

    def _close_text(self) -> None:
        text = " ".join("".join(self._text).split())
        self._text.clear()
        if text and text != "-":
            self._paragraphs.append(text)

    def end_paragraph(self) -> None:
        self._close_text()
        if self._paragraphs:
            self.blocks.append(Block(0, "\n\n".join(self._paragraphs)))
            self._paragraphs.clear()
