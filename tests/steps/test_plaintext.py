from __future__ import annotations

import pytest

from steps.lib.plaintext import markdown_to_text


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
        ("- a list item\n- another", "- a list item\n- another"),
        ("```sh\n# not a heading **kept**\n```\nafter", "# not a heading **kept**\nafter"),
    ],
)
def test_markup_goes_and_the_words_stay(markdown: str, text: str) -> None:
    assert markdown_to_text(markdown) == text
