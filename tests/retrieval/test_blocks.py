"""Code blocks of a chunk's plain text: told from prose on real generator output, fenced so
the widget shows them as code, and the sentences that point at them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steps.lib.text import blocks

# As the indexer renders Requests's quickstart (Sphinx HTML, Debian python-requests-doc):
# a `>>>` session split over blank lines, an output line, prose pointing at it.
SPHINX = (
    "As an example, if you wanted to pass key1=value1 and key2=value2 to httpbin.org/get, "
    "you would use the following code:\n\n"
    ">>> payload = {'key1': 'value1', 'key2': 'value2'}\n"
    ">>> r = requests.get('https://httpbin.org/get', params=payload)\n\n"
    "You can see that the URL has been correctly encoded by printing the URL:\n\n"
    ">>> print(r.url)\nhttps://httpbin.org/get?key2=value2&key1=value1\n\n"
    "Note that any dictionary key whose value is None will not be added to the URL's query "
    "string."
)
# As the indexer renders MkDocs's contributing page (MkDocs HTML, Debian mkdocs-doc).
MKDOCS = (
    "For example, to update the pot file of the mkdocs theme, run the following command:\n\n"
    "pybabel extract --project=MkDocs --mapping-file mkdocs/themes/babel.cfg\n\n"
    "All BasePlugin subclasses contain the following method(s):"
)


def test_a_sphinx_session_is_code_and_its_sentences_prose() -> None:
    found = blocks.blocks(SPHINX)
    assert [b.kind for b in found] == ["prose", "code", "prose", "code", "prose"]
    assert found[1].text.splitlines() == SPHINX.split("\n\n")[1].splitlines()


def test_a_command_is_code_and_a_sentence_with_brackets_is_prose() -> None:
    assert [b.kind for b in blocks.blocks(MKDOCS)] == ["prose", "code", "prose"]


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("Added support for chardet 5.0.0 (#6179)", False),
        ("Make Response.json() callable, not property.", False),
        ("(note: 1.25.0 and 1.25.1 are incompatible)", False),
        ("def on_config(self, config, **kwargs):", True),
        ("npm ci --omit=dev", True),
        ("$ mkdocs --version", True),
        ("config['theme'].static_templates.add('my_template.html')", True),
    ],
)
def test_code_lines_are_told_from_prose_lines_of_real_pages(line: str, code: bool) -> None:
    assert blocks.is_code_line(line) is code


@pytest.mark.parametrize(
    ("sentence", "forward", "back"),
    [
        ("you would use the following code:", True, False),
        ("For example, run it twice.", False, False),
        ("For example:", True, False),
        ("Run the command below.", True, False),
        ("The code above prints the URL.", False, True),
        ("This sets a timeout of five seconds.", False, False),
    ],
)
def test_sentences_that_point_at_code(sentence: str, forward: bool, back: bool) -> None:
    assert blocks.points_forward(sentence) is forward
    assert blocks.points_back(sentence) is back


def test_fenced_code_keeps_its_lines_and_prose_is_unchanged() -> None:
    text = blocks.with_fences(SPHINX)
    assert "```\n>>> payload = {'key1': 'value1', 'key2': 'value2'}\n>>> r = " in text
    assert text.startswith("As an example") and text.endswith("query string.")


@given(st.text(alphabet="`ab \n<>", max_size=60))
def test_a_fence_is_longer_than_any_backtick_run_inside_it(code: str) -> None:
    fenced = blocks.fence(code)
    bar = fenced.split("\n", 1)[0]
    assert set(bar) == {"`"} and len(bar) >= 3 and fenced.endswith("\n" + bar)
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    assert len(bar) > longest
    assert fenced[len(bar) + 1 : -(len(bar) + 1)] == code  # the code itself, untouched
