"""The offline responder quotes only what the answer cites, best-ranked chunk first,
in whole sentences."""

from __future__ import annotations

import re
from typing import Any

import pytest

from steps.lib.grounding.knowledge import Chunk, Knowledge
from steps.lib.grounding.retrieval import follow_up_query, ground
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.offline import NO_MATCH, OFFLINE_PREFIX, compose_reply
from steps.lib.text import prompt
from steps.lib.text.tokens import count_tokens
from steps.retrieve import TOP_MATCHES, sources_of

SYNOPSIS = {
    "page": "/commands/npm-ci",
    "heading": "npm-ci > Synopsis",
    "text": "Run npm ci in a build. It installs exactly what the lockfile says.",
}
DESCRIPTION = {
    "page": "/commands/npm-ci",
    "heading": "npm-ci > Description",
    "text": "The description of the clean install command and the lockfile, in detail.",
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


FENCE = re.compile(r"^(`{3,})\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)


def quoted(reply: str) -> list[str]:
    """The reply's sentences and its code blocks (each fenced block whole)."""
    assert reply.startswith(OFFLINE_PREFIX)
    body = reply.removeprefix(OFFLINE_PREFIX)
    code = [m.group(2) for m in FENCE.finditer(body)]
    prose = [s for s in re.split(r"(?<=[.!?])\s+|\n", FENCE.sub("", body)) if s.strip()]
    return prose + code


def test_only_the_first_source_is_quoted_even_when_a_later_one_matches_better() -> None:
    system = prompt.system_text([SYNOPSIS, DESCRIPTION])
    reply = compose_reply(system, [user("description of the clean install lockfile")], 500)
    assert all(sentence in SYNOPSIS["text"] for sentence in quoted(reply))
    # The naive variant (pick from every source) would quote the Description.
    naive = compose_reply(prompt.system_text([DESCRIPTION]), [user("description")], 500)
    assert "description of the clean install" in naive


def test_sentences_are_whole_and_dropped_whole_under_the_token_bound() -> None:
    system = prompt.system_text([SYNOPSIS])
    full = compose_reply(system, [user("npm ci lockfile build")], 500)
    assert quoted(full) == ["Run npm ci in a build.", "It installs exactly what the lockfile says."]
    bound = count_tokens(OFFLINE_PREFIX + "Run npm ci in a build.") + 2
    short = compose_reply(system, [user("npm ci lockfile build")], bound)
    assert quoted(short) == ["Run npm ci in a build."]


def test_a_follow_up_picks_sentences_by_the_earlier_turns_too() -> None:
    source = {
        "page": "/p",
        "heading": "Keys",
        "text": "Issue two hardware keys per person. Print recovery codes. Passkeys sync.",
    }
    messages = [
        user("recovery codes please"),
        {"role": "assistant", "content": [{"text": "..."}]},
        user("and then?"),
    ]
    reply = compose_reply(prompt.system_text([source]), messages, 500)
    assert quoted(reply) == ["Print recovery codes."]


def test_no_reference_means_no_match() -> None:
    assert compose_reply(prompt.system_text([]), [user("anything")], 500) == NO_MATCH


@pytest.mark.parametrize("page", [None, "/posts/mfa-and-passkeys", "/posts/waf-rate-limiting"])
def test_on_the_sample_site_every_quoted_sentence_comes_from_a_cited_chunk(
    kb: Knowledge, embedder: HashingEmbedder, questions: list[dict[str, Any]], page: str | None
) -> None:
    for q in questions:
        history = [{"role": "user", "content": q["previous"]}] if "previous" in q else []
        query = follow_up_query(q["question"], history, history_chars=2000, page=page)
        found = ground(kb, embedder.embed([query.text])[0], query, 1500, TOP_MATCHES)
        chunks: list[Chunk] = found.chunks
        cited = {(s["page"], s["heading"]) for s in sources_of(found.cited)}
        grounding = [{"page": c.page, "heading": c.heading, "text": c.text} for c in chunks]
        reply = compose_reply(prompt.system_text(grounding), [user(q["question"])], 500)
        texts = [g["text"] for g in grounding if (g["page"], g["heading"]) in cited]
        for sentence in quoted(reply):
            assert any(sentence in text for text in texts), (q["question"], sentence)
