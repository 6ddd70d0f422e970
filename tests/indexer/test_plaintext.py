from __future__ import annotations

import pytest

from indexer.chunking import chunk_page
from indexer.pages import parse_page
from indexer.plaintext import BULLET, inline_text, markdown_to_text


@pytest.mark.parametrize(
    ("markdown", "text"),
    [
        ("### Network and edge", "Network and edge"),
        ("**WAF** is a *filter*.", "WAF is a filter."),
        ("Use `X-Origin-Verify` here.", "Use X-Origin-Verify here."),
        (
            "See [the guide](/guides/home-router) or ![a diagram](x.png).",
            "See the guide or a diagram.",
        ),
        ("snake_case_names and 2 * 3 * 4 stay", "snake_case_names and 2 * 3 * 4 stay"),
        ("- a list item\n- another", f"{BULLET} a list item\n{BULLET} another"),
        ("```sh\n# not a heading **kept**\n```\nafter", "# not a heading **kept**\n\nafter"),
        # Soft-wrapped source lines are one sentence; a hard break stays a line break.
        ("one sentence\nwrapped across\nthree lines.", "one sentence wrapped across three lines."),
        ("first line  \nsecond line", "first line\nsecond line"),
        ("3. third\n4. fourth", "3. third\n4. fourth"),
        ("* Default: `true`\n* Type: Boolean", f"{BULLET} Default: true\n{BULLET} Type: Boolean"),
        ("- outer\n  - inner\n    wrapped", f"{BULLET} outer\n  {BULLET} inner wrapped"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a | b\n1 | 2"),
        ("<div>kept <b>words</b></div>", "kept words"),
        ("text <span>inline</span> html", "text inline html"),
        ("    indented code\n    kept", "indented code\nkept"),
        ("", ""),
    ],
)
def test_markup_goes_and_the_words_stay(markdown: str, text: str) -> None:
    assert markdown_to_text(markdown) == text


def test_code_keeps_every_character_and_its_line_breaks() -> None:
    code = "npm install [<package-spec> ...]\n  # **not** emphasis, [not](a-link)\n\tindented"
    assert markdown_to_text(f"```bash\n{code}\n```") == code


def test_headings_are_rendered_inline() -> None:
    assert (
        inline_text("Keeping files *out* of your `Package`") == "Keeping files out of your Package"
    )
    assert inline_text("[`npm ci`](/commands/npm-ci)") == "npm ci"


def test_chunks_are_stored_as_plain_text_with_a_plain_heading_trail() -> None:
    page = parse_page(
        "docs/config.md",
        "---\ntitle: npm-config\n---\n\n### Keeping *files* out\n\n"
        "This paragraph is\nsoft wrapped and links [the docs](/x).\n\n"
        "* Default: `true`\n* Type: Boolean\n\n```\nnpm config set a=b\n```\n",
    )
    [chunk] = chunk_page(page, min_tokens=1)
    assert chunk.heading == "npm-config > Keeping files out"
    assert chunk.text == (
        "This paragraph is soft wrapped and links the docs.\n\n"
        f"{BULLET} Default: true\n{BULLET} Type: Boolean\n\nnpm config set a=b"
    )
