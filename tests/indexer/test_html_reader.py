"""The rules of html_reader.py, each on the smallest page that shows it (the real pages are
in test_real_pages.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from indexer.html_reader import HtmlBlock, markdown_literal, own_blocks, read_html
from indexer.plaintext import markdown_to_text


def texts(html: str) -> list[str]:
    return [b.text for b in read_html(html).blocks]


def test_landmark_roles_are_dropped_whatever_the_element() -> None:
    html = "".join(
        f'<div role="{role}">{role} chrome</div>'
        for role in ("navigation", "search", "contentinfo", "banner", "complementary")
    )
    assert texts(html + "<p>Body.</p>") == ["Body."]


def test_a_header_or_footer_inside_the_content_is_content() -> None:
    page = (
        "<header>Site name</header><article><header><h1>Title</h1></header><p>Body.</p>"
        "<footer>Posted by Ann</footer></article><footer>Copyright</footer>"
    )
    blocks = read_html(page).blocks
    assert blocks[0] == HtmlBlock(1, "Title")
    assert "Posted by Ann" in blocks[1].text and "Copyright" not in blocks[1].text
    assert all("Site name" not in b.text for b in blocks)


def test_only_the_main_landmark_is_read_when_the_page_marks_one() -> None:
    page = '<div class="menu">Home About</div><div role="main"><p>Body.</p></div><p>Ad</p>'
    assert texts(page) == ["Body."]
    assert texts('<div class="menu">Home About</div><p>Body.</p>') == ["Home About\n\nBody."]


def test_heading_anchors_come_from_the_page() -> None:
    page = (
        '<h2 id="own">Own id</h2>'
        '<h2>Permalink<a class="headerlink" href="#link">\u00b6</a></h2>'
        '<section id="sec"><h2>Section id</h2><p>x</p></section>'
        '<a id="before"></a><h2>Doxygen</h2>'
        '<h2><a class="anchor" id="inside"></a>Inside</h2>'
        "<p>text</p><h2>None</h2>"
    )
    headings = [(b.text, b.anchor) for b in read_html(page).blocks if b.level]
    assert headings == [
        ("Own id", "own"),
        ("Permalink", "link"),
        ("Section id", "sec"),
        ("Doxygen", "before"),
        ("Inside", "inside"),
        ("None", ""),
    ]


def test_an_id_before_text_is_not_taken_by_a_later_heading() -> None:
    page = '<div id="wrapper"><p>Intro text.</p><h2>Later</h2></div>'
    assert [b.anchor for b in read_html(page).blocks if b.level] == [""]


def test_unclosed_and_stray_tags_do_not_leak_chrome() -> None:
    page = "<nav><ul><li>Home<li>About</ul></nav></span><p>Body<p>More</div><p>End"
    assert texts(page) == ["Body\n\nMore\n\nEnd"]


def test_the_page_can_be_linked_to_every_id_and_name() -> None:
    page = '<div id="a"><a name="b"></a><span id="c"></span></div>'
    assert read_html(page).ids == {"a", "b", "c"}


@given(st.text(alphabet=st.characters(codec="ascii", categories=["P", "S", "L", "N"])))
def test_prose_escaped_for_markdown_reads_back_as_itself(text: str) -> None:
    """Whatever punctuation a page's prose holds, chunking renders it as the page shows it
    (a line of text; a leading "- ", "1. " or "+ " is left to Markdown as a list marker)."""
    line = " ".join(text.split())
    rendered = markdown_to_text(markdown_literal(line))
    if not line or line[0] in "-+=0123456789" or set(line) <= set("-=_*"):
        return  # list markers, setext/thematic lines: deliberately Markdown
    assert rendered == line


def test_a_heading_that_is_only_a_link_to_another_page_is_a_summary_heading() -> None:
    page = read_html(
        '<h1>Posts</h1><p>What we wrote.</p>'
        '<h2><a href="/posts/a/">Post A</a></h2><h5>May 1</h5><p>A opens so.</p>'
        '<h3>Inside A</h3><p>More of A.</p>'
        '<h2>Our own <a href="/about/">team</a></h2><p>Ours.</p>'
        '<h2 id="x">Here<a class="anchor" href="#x">#</a></h2><p>Also ours.</p>'
    )  # fmt: skip
    away = [b.links_away for b in page.blocks if b.level]
    assert away == [False, True, False, False, False, False]  # Posts, Post A, May 1, ...
    own = own_blocks(page.blocks)
    assert [b.text for b in own] == [
        "Posts", "What we wrote.", "Our own team", "Ours.", "Here", "Also ours."
    ]  # fmt: skip
    assert own_blocks(own) == own


def test_a_page_that_leaves_out_its_head_end_tag_is_still_read() -> None:
    """HTML lets a page omit </head> (<body> ends it); minifiers do (Just the Docs' built
    pages: tests/data/real_pages/just-the-docs). A reader that waited for </head> read
    nothing of such a page."""
    html = "<html><head><title>T</title><meta charset=utf-8><body><main><h1>Hi</h1><p>Text.</p>"
    assert texts(html) == ["Hi", "Text."]
    assert read_html(html).title == "T"


def test_a_heading_takes_the_id_before_it_unless_text_comes_between() -> None:
    """Visible text between (even a sidebar's, which is dropped) breaks the link between an
    id and the heading after it; a script's code does not."""
    chrome = '<div id="wrap"><aside>Menu</aside><main><h1>Title</h1><p>Text.</p></main></div>'
    assert read_html(chrome).blocks[0].anchor == ""
    script = '<section id="s"><script>var x = 1;</script><h2>Title</h2><p>Text.</p></section>'
    assert read_html(script).blocks[0].anchor == "s"
