"""The offline stand-in quotes whole thoughts, on sections of real generator output: it
never ends on a sentence pointing at something it leaves out, never quotes a code comment
as prose, and brings the code block a quoted sentence points at."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib.providers.offline import NO_MATCH, OFFLINE_PREFIX, compose_reply
from steps.lib.text import blocks, prompt, quoting
from steps.lib.text.tokens import terms

# Sections as the indexer renders them from Debian's python-requests-doc 2.28.1 (Sphinx;
# Apache 2.0) and mkdocs-doc 1.4.2 (MkDocs; BSD-2-Clause), copied verbatim.
PARAMS = {
    "page": "/user/quickstart",
    "heading": "Quickstart > Passing Parameters In URLs",
    "text": (
        "Requests allows you to provide these arguments as a dictionary of strings, using "
        "the params keyword argument. As an example, if you wanted to pass key1=value1 and "
        "key2=value2 to httpbin.org/get, you would use the following code:\n\n"
        ">>> payload = {'key1': 'value1', 'key2': 'value2'}\n"
        ">>> r = requests.get('https://httpbin.org/get', params=payload)\n\n"
        "You can see that the URL has been correctly encoded by printing the URL:\n\n"
        ">>> print(r.url)\nhttps://httpbin.org/get?key2=value2&key1=value1\n\n"
        "Note that any dictionary key whose value is None will not be added to the URL\u2019s "
        "query string."
    ),
}
LOGGING = {
    "page": "/api",
    "heading": "Developer Interface > Migrating to 1.x > API Changes",
    "text": (
        "import requests\nimport logging\n\n"
        "# Enabling debugging at http.client level (requests->urllib3->http.client)\n"
        "# you will see the REQUEST, including HEADERS and DATA, and RESPONSE with HEADERS "
        "but without DATA.\n"
        "# the only thing missing will be the response.body which is not logged.\n"
        "try: # for Python 3\n    from http.client import HTTPConnection\n"
        "except ImportError:\n    from httplib import HTTPConnection\n"
        "HTTPConnection.debuglevel = 1\n\n"
        "logging.basicConfig() # you need to initialize logging, otherwise you will not see "
        "anything from requests\nlogging.getLogger().setLevel(logging.DEBUG)\n\n"
        "requests.get('https://httpbin.org/headers')"
    ),
}
POT = {
    "page": "/about/contributing",
    "heading": "Contributing to MkDocs > Submitting changes to the builtin themes",
    "text": (
        "Each time a translatable text placeholder is added, removed or changed in a theme "
        "template, the theme's Portable Object Template (pot) file needs to be updated by "
        "running the extract_messages command. For example, to update the pot file of the "
        "mkdocs theme, run the following command:\n\n"
        "pybabel extract --project=MkDocs --copyright-holder=MkDocs --no-wrap "
        "--mapping-file mkdocs/themes/babel.cfg --output-file "
        "mkdocs/themes/mkdocs/messages.pot mkdocs/themes/mkdocs\n\n"
        "The updated pot file should be included in a PR with the updated template. See the "
        "guide on Translating Themes for details."
    ),
}
SOURCES = [PARAMS, LOGGING, POT]
WORDS = sorted({w for s in SOURCES for w in terms(s["text"])})
FENCE = re.compile(r"^(`{3,})\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)


def reply(source: dict[str, str], question: str, max_tokens: int = 500) -> str:
    user: dict[str, Any] = {"role": "user", "content": [{"text": question}]}
    text = compose_reply(prompt.system_text([source]), [user], max_tokens)
    assert text.startswith(OFFLINE_PREFIX) or text == NO_MATCH
    return text.removeprefix(OFFLINE_PREFIX) if text != NO_MATCH else ""


def prose_of(text: str) -> str:
    return FENCE.sub("", text).strip()


@pytest.mark.parametrize(
    ("source", "question", "must", "code"),
    [
        (PARAMS, "how do I pass key value parameters with the following code", "following code:",
         ">>> payload = {'key1': 'value1', 'key2': 'value2'}\n>>> r = requests.get("),
        (POT, "how do I update the pot file of the mkdocs theme with a command",
         "run the following command:", "pybabel extract --project=MkDocs"),
    ],
)  # fmt: skip
def test_a_sentence_pointing_at_a_code_block_brings_it(
    source: dict[str, str], question: str, must: str, code: str
) -> None:
    text = reply(source, question)
    assert must in text
    fenced = [m.group(2) for m in FENCE.finditer(text)]
    assert fenced and fenced[0].startswith(code)
    assert text.index(must) < text.index(fenced[0])  # the block right after its sentence
    # The naive variant (the sentences alone, as before) ends on the colon.
    naive = " ".join(p.text for p in quoting.pieces(source["text"]) if not p.code)
    assert must in naive


def test_a_code_comment_is_never_quoted_as_prose() -> None:
    text = reply(LOGGING, "what will you see, the request including headers and data?")
    assert "you will see the REQUEST" not in prose_of(text)
    # What is quoted is the code itself, fenced and verbatim.
    assert all(m.group(2) in LOGGING["text"] for m in FENCE.finditer(text))
    # The naive split (every line that ends like a sentence) quotes the comment.
    naive = [line for line in LOGGING["text"].splitlines() if line.endswith(".")]
    assert any("you will see the REQUEST" in line for line in naive)


def test_a_sentence_whose_block_does_not_fit_is_left_out() -> None:
    full = reply(POT, "how do I update the pot file of the mkdocs theme with a command")
    bound = len(terms(full)) // 2 + 30  # room for the first sentence, not for the command
    short = reply(POT, "how do I update the pot file of the mkdocs theme with a command", bound)
    assert "pybabel" not in short and not short.rstrip().endswith(":")


@settings(max_examples=200, deadline=None)
@given(
    source=st.sampled_from(SOURCES),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    max_tokens=st.integers(40, 600),
)
def test_any_reply_is_whole_thoughts(
    source: dict[str, str], words: list[str], max_tokens: int
) -> None:
    text = reply(source, " ".join(words), max_tokens)
    body = prose_of(text)
    # Never ends on a sentence pointing forward at something left out.
    if text and not text.endswith("`"):
        last = re.split(r"(?<=[.!?:])\s+", body)[-1]
        assert not blocks.points_forward(last), text
    # Every fenced block is a code block of the section, verbatim (or its first lines).
    code = [b.text for b in blocks.blocks(source["text"]) if b.kind == "code"]
    for m in FENCE.finditer(text):
        assert any(c.startswith(m.group(2)) for c in code), m.group(2)
    # No comment line outside a fence.
    assert not any(blocks.is_comment(line) for line in body.splitlines())
