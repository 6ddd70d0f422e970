from __future__ import annotations

from indexer.chunking import chunk_page, paragraphs
from indexer.pages import parse_page
from steps.lib.grounding.knowledge import link_anchor
from steps.lib.text.tokens import count_tokens

PROSE = "Rate limits stop one address from hammering an endpoint. " * 6


def test_a_page_without_headings_is_one_chunk_under_its_title() -> None:
    chunks = chunk_page(parse_page("now.md", PROSE))
    assert [(c.id, c.page, c.heading) for c in chunks] == [("/now.html#now", "/now.html", "Now")]
    assert chunks[0].text == PROSE.strip()


def test_nested_headings_build_a_trail_that_resets_at_each_level() -> None:
    body = f"# Guide\n{PROSE}\n## Wi-Fi\n### WPA3\n{PROSE}\n### Guests\n{PROSE}\n## Ports\n{PROSE}"
    chunks = chunk_page(parse_page("g.md", body))
    assert [c.heading for c in chunks] == [
        "Guide",
        "Guide > Wi-Fi > WPA3",
        "Guide > Wi-Fi > Guests",
        "Guide > Ports",
    ]


def test_front_matter_title_roots_the_trail() -> None:
    body = f"---\ntitle: Privacy notice\n---\n{PROSE}\n## Your rights\n{PROSE}"
    chunks = chunk_page(parse_page("privacy.md", body))
    assert [c.heading for c in chunks] == ["Privacy notice", "Privacy notice > Your rights"]


def test_h4_and_deeper_stay_inside_their_section() -> None:
    chunks = chunk_page(parse_page("p.md", f"## Top\n{PROSE}\n#### Detail\n{PROSE}"))
    assert (
        len(chunks) == 1 and "\n\nDetail\n\n" in chunks[0].text
    )  # a plain line: rendered at index time


def test_code_block_hash_lines_do_not_split_a_section() -> None:
    body = f"## Containment\n{PROSE}\n```bash\n# step one\naws iam list-users\n```\n"
    chunks = chunk_page(parse_page("ir.md", body))
    assert len(chunks) == 1 and "# step one" in chunks[0].text


def test_an_over_long_section_splits_on_paragraph_boundaries_within_the_limit() -> None:
    paras = [f"Paragraph {i}. " + PROSE for i in range(12)]
    chunks = chunk_page(parse_page("long.md", "## Long\n" + "\n\n".join(paras)), max_tokens=200)
    assert len(chunks) > 1
    assert all(count_tokens(c.text) <= 200 for c in chunks)
    assert {c.heading for c in chunks} == {"Long > Long"}
    assert [p for c in chunks for p in paragraphs(c.text)] == [p.strip() for p in paras]
    assert len({c.id for c in chunks}) == len(chunks)


def test_a_fenced_block_with_blank_lines_is_never_cut() -> None:
    code = "```\nline one\n\nline two\n```"
    assert paragraphs(f"before\n\n{code}\n\nafter") == ["before", code, "after"]


def test_a_tiny_section_merges_into_the_previous_one_keeping_its_heading_as_text() -> None:
    body = f"## Big\n{PROSE}\n## Small\nJust one line.\n## Other\n{PROSE}"
    chunks = chunk_page(parse_page("m.md", body))
    assert [c.heading for c in chunks] == ["M > Big", "M > Other"]
    assert chunks[0].text.endswith("\n\nSmall\n\nJust one line.")


def test_a_tiny_first_section_merges_forward() -> None:
    chunks = chunk_page(parse_page("f.md", f"# Title\nShort intro.\n## Body\n{PROSE}"))
    assert len(chunks) == 1
    assert chunks[0].heading == "Title"
    assert chunks[0].text.startswith("Short intro.\n\nBody\n\n")


def test_token_count_covers_heading_and_text() -> None:
    (chunk,) = chunk_page(parse_page("t.md", f"## Heading words\n{PROSE}"))
    assert chunk.tokens == count_tokens(f"{chunk.heading}\n{chunk.text}")


def _long(word: str) -> str:
    return "\n\n".join(f"{word} paragraph {i} " + "filler words here " * 30 for i in range(6))


def test_a_split_sections_parts_link_to_the_section() -> None:
    chunks = chunk_page(parse_page("a.md", f"# Guide\n\n## Usage\n\n{_long('usage')}\n"))
    ids = [c.id for c in chunks]
    assert ids[0] == "/a.html#usage" and len(ids) > 1
    assert ids[1:] == [f"/a.html#usage~{n}" for n in range(2, len(ids) + 1)]
    assert {link_anchor(i) for i in ids} == {"usage"}


def test_a_second_heading_of_a_name_links_as_the_demo_site_renders_it() -> None:
    body = "## Setup\n\n" + "Alpha text. " * 20 + "\n\n## Setup\n\n" + "Beta text. " * 20
    ids = [c.id for c in chunk_page(parse_page("a.md", "# A\n\n" + body))]
    assert ids == ["/a.html#setup", "/a.html#setup-2"]
    assert [link_anchor(i) for i in ids] == ["setup", "setup-2"]


def test_an_html_heading_the_page_gives_no_id_links_to_the_page() -> None:
    html = "<h1 id='t'>T</h1><p>" + "Text. " * 30 + "</p><h2>No id</h2><p>" + "More. " * 30
    ids = [c.id for c in chunk_page(parse_page("a.html", html + "</p>"))]
    assert ids == ["/a.html#t", "/a.html#~no-id"]
    assert [link_anchor(i) for i in ids] == ["t", ""]
