"""S4, retrieve: grounding and sources, with the wire shapes of docs/internals.md."""

from __future__ import annotations

import pytest

from steps import retrieve

from .conftest import load_event


def test_retrieve_grounds_on_the_page_and_top_matches(aws):
    out = retrieve.handler(load_event("retrieve"), None)
    assert out["embeddingTokens"] > 0
    assert out["grounding"], "expected grounding chunks"
    assert "/posts/waf.html" in {g["page"] for g in out["grounding"]}
    assert {"page", "heading", "text"} == set(out["grounding"][0])
    assert len(out["sources"]) == len({(s["page"], s["heading"]) for s in out["sources"]})
    assert 0 < len(out["sources"]) <= retrieve.TOP_MATCHES


def test_retrieve_cites_the_top_matches_not_every_section_of_the_current_page(aws):
    # Asked about reservations while reading the WAF page: the WAF page still grounds the
    # answer, but the sources are what ranked, best first.
    event = load_event("retrieve")
    event["request"] = {"message": "How does a reservation hold the worst-case cost?",
                        "page": "/posts/waf"}  # fmt: skip
    out = retrieve.handler(event, None)
    assert "/posts/waf.html" in {g["page"] for g in out["grounding"]}
    assert out["sources"][0] == {
        "page": "/posts/budgets.html",
        "heading": "Budgets and ceilings",
        "anchor": "budgets-and-ceilings",  # the section's id on the page, for its link
    }
    # The best match leads the reference, so an answer quotes what it cites first.
    first = out["grounding"][0]
    assert {"page": first["page"], "heading": first["heading"]} == {
        k: out["sources"][0][k] for k in ("page", "heading")
    }


def test_retrieve_fails_closed_without_a_knowledge_artifact(aws, monkeypatch, tmp_path):
    from steps.lib.runtime.errors import KnowledgeError

    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(tmp_path))
    with pytest.raises(KnowledgeError):
        retrieve.handler(load_event("retrieve"), None)


def test_a_follow_up_is_embedded_turn_by_turn_where_the_embedder_can(aws, monkeypatch):
    """The local model embeds the message and the earlier user turns apart
    (local_embedder.conversation_vector); an embedder without `embed_turns` (Titan, the
    stand-in) gets the one joined text, as before."""
    from steps.lib.providers import models

    real = models.query_embedder

    class Recording:
        def __init__(self, inner):
            self.inner, self.id, self.calls = inner, inner.id, []

        def embed_query(self, text):
            self.calls.append(("text", text))
            return self.inner.embed_query(text)

        def embed_turns(self, message, earlier):
            self.calls.append(("turns", message, tuple(earlier)))
            return self.inner.embed_query(message)

    recording = []
    monkeypatch.setattr(
        models, "query_embedder", lambda s: recording.append(Recording(real(s))) or recording[-1]
    )
    event = load_event("retrieve")
    event["request"] = {
        "message": "Does it count per IP?",
        "history": [
            {"role": "user", "content": "How does the WAF rate rule work?"},
            {"role": "assistant", "content": "It counts requests."},
        ],
    }
    retrieve.handler(event, None)
    assert recording[-1].calls == [
        ("turns", "Does it count per IP?", ("How does the WAF rate rule work?",))
    ]
    event["request"] = {"message": "How does the WAF rate rule work?", "history": []}
    retrieve.handler(event, None)
    assert recording[-1].calls == [("text", "How does the WAF rate rule work?")]
