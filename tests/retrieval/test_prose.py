"""Extracted replies read as prose: a heading kept as a line of text never runs into the
sentence after it, no list marker or code line sits mid-reply, and a degraded answer
never ends on a bare heading word."""

from __future__ import annotations

from typing import Any

from steps.lib.providers.offline import OFFLINE_PREFIX, compose_reply
from steps.lib.text import prompt, prose

ABOUT = {
    "page": "/about",
    "heading": "About Mira Halvorsen",
    "text": (
        "Who writes Kestrel Notes and why\n\nBackground\n\nMira Halvorsen is a security "
        "engineer who writes Kestrel Notes. She started it to share what she learns."
    ),
}
INSTALL = {
    "page": "/install",
    "heading": "Install > Clean install",
    "text": (
        "A clean install removes the node_modules folder first.\n"
        "- It reads the lockfile and installs exactly what it lists.\n"
        "npm ci --omit=dev\n"
        "Use it in continuous integration.\n\nExample"
    ),
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def reply_to(source: dict[str, str], question: str) -> str:
    return compose_reply(prompt.system_text([source]), [user(question)], 500)


def test_a_heading_line_never_runs_into_the_next_sentence() -> None:
    reply = reply_to(ABOUT, "who writes kestrel notes and what is her background")
    body = reply.removeprefix(OFFLINE_PREFIX)
    assert body.startswith("Mira Halvorsen is a security engineer")
    assert "Background" not in body and "and why" not in body


def test_no_bullet_or_code_line_inside_a_reply() -> None:
    body = reply_to(INSTALL, "what does a clean install with the lockfile do").removeprefix(
        OFFLINE_PREFIX
    )
    assert "It reads the lockfile" in body
    assert "- " not in body and "npm ci" not in body and not body.endswith("Example")


def test_a_degraded_text_never_ends_on_a_bare_heading() -> None:
    assert prose.without_trailing_headings(INSTALL["text"]).endswith(
        "Use it in continuous integration."
    )
    assert prose.without_trailing_headings("Only a heading") == "Only a heading"


def test_sentences_keep_prose_with_parentheses_and_colons() -> None:
    text = "Set the window (in seconds) to 60.\nTo publish:\n1. Log in first."
    assert prose.sentences(text) == [
        "Set the window (in seconds) to 60.",
        "To publish:",
        "Log in first.",
    ]
