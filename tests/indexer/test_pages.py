from __future__ import annotations

import pytest

from indexer.pages import Block, page_path, parse_html, parse_markdown, parse_page
from steps.lib.grounding.knowledge import normalise_page


@pytest.mark.parametrize(
    ("relative", "file", "pretty"),
    [
        ("posts/waf.md", "/posts/waf.html", "/posts/waf"),
        ("hours.html", "/hours.html", "/hours"),
        ("index.md", "/index.html", "/"),
        ("guides/index.html", "/guides/index.html", "/guides"),
        ("about.markdown", "/about.html", "/about"),
        ("guides/home-router.htm", "/guides/home-router.htm", "/guides/home-router"),
    ],
)
def test_page_path_is_the_link_the_host_serves(relative: str, file: str, pretty: str) -> None:
    """ "file" (the default) names the object a static host holds (S3, CloudFront); both
    forms name one page for retrieval."""
    assert page_path(relative) == file == page_path(relative, "file")
    assert page_path(relative, "pretty") == pretty
    assert normalise_page(file) == normalise_page(pretty) == pretty


def test_front_matter_title_is_the_page_title_and_not_body_text() -> None:
    page = parse_page("p.md", '---\ntitle: "Threat modeling"\ndate: 2025-01-01\n---\nBody.\n')
    assert page.title == "Threat modeling"
    assert page.blocks == (Block(0, "Body."),)


def test_unclosed_front_matter_is_content() -> None:
    page = parse_page("p.md", "---\ntitle: nope\n\n# Real title\n")
    assert page.title == "Real title"


def test_title_falls_back_to_first_h1_then_to_the_file_name() -> None:
    assert parse_page("a.md", "intro\n\n# Heading One\ntext").title == "Heading One"
    assert parse_page("posts/rate-limits.md", "no headings at all").title == "Rate limits"


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    body = "# Real\n```bash\n# a comment\n## another\n```\n~~~\n# tilde fenced\n~~~\n## Next\n"
    blocks = parse_markdown(body)
    assert [b for b in blocks if b.level] == [Block(1, "Real"), Block(2, "Next")]
    assert "# a comment" in blocks[1].text and "# tilde fenced" in blocks[1].text


def test_a_shorter_fence_inside_a_longer_one_does_not_close_it() -> None:
    blocks = parse_markdown("````\n```\n# still code\n```\n````\n# After\n")
    assert blocks[-1] == Block(1, "After")
    assert "# still code" in blocks[0].text


def test_closing_hashes_and_html_comments_are_dropped() -> None:
    blocks = parse_markdown("## Title ##\n<!-- hidden note -->\ntext\n")
    assert blocks == [Block(2, "Title"), Block(0, "text")]


def test_html_headings_text_and_pre_without_page_chrome() -> None:
    title, blocks = parse_html(
        "<html><head><title>Router guide</title><script>var x = 1;</script></head><body>"
        "<nav>Home · Guides</nav><h1>Router</h1><p>Change the <b>password</b>.</p>"
        "<ul><li>Disable WPS</li><li>Disable UPnP</li></ul>"
        "<h2>Scan</h2><pre># a comment\nnmap host</pre><footer>© site</footer></body></html>"
    )
    assert title == "Router guide"
    assert blocks[0] == Block(1, "Router")
    assert blocks[1].text == "Change the password.\n\n- Disable WPS\n\n- Disable UPnP"
    assert blocks[2] == Block(2, "Scan")
    assert blocks[3].text == "```\n# a comment\nnmap host\n```"
    rendered = " ".join(b.text for b in blocks)
    assert "var x" not in rendered and "Home · Guides" not in rendered and "©" not in rendered


HUGO_LIST_HEAD = (
    '<head><meta name="generator" content="Hugo 0.111.3">'
    '<link rel="alternate" type="application/rss+xml" href="/posts/index.xml"></head>'
)


def test_a_hugo_list_page_is_read_as_its_own_text_without_the_summaries() -> None:
    body = (
        "<main><h1>Posts</h1><p>Notes from the team.</p>"
        '<article><h2><a href="/posts/a/">Post A</a></h2><p>A opens so.</p></article>'
        '<article><h2><a href="/posts/b/">Post B</a></h2><p>B opens so.</p></article></main>'
    )
    page = parse_page("posts/index.html", HUGO_LIST_HEAD + body)
    assert [b.text for b in page.blocks] == ["Posts", "Notes from the team."]
    plain = parse_page("posts/index.html", body)  # not a page Hugo wrote: read whole
    assert "A opens so." in [b.text for b in plain.blocks]


def test_a_hugo_post_with_one_heading_that_links_elsewhere_is_read_whole() -> None:
    """Some themes link the site's feed from every page: one linked heading on a post is
    the post's own section, not a list of summaries."""
    body = (
        '<main><h1>Release</h1><p>Out now.</p><h2><a href="/download/">Download</a></h2>'
        "<p>Get it.</p></main>"
    )
    page = parse_page("posts/release/index.html", HUGO_LIST_HEAD + body)
    assert [b.text for b in page.blocks] == ["Release", "Out now.", "Download", "Get it."]
