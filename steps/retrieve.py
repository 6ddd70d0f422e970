"""S4 Retrieve: embed (previous user turn + message), hybrid-rank the index with the
conversation's earlier terms folded in (retrieval.follow_up_query), cut to budget.

The index is loaded (and checked against the query embedder) before the embedding call, so
a missing or mismatched artifact fails closed without paying for an embedding. The query is
cut to ``pricing.TITAN_QUERY_MAX_BYTES`` of byte bound: under Titan's 8,192-token input
limit whatever its tokenizer does, and within what the reserve paid for. Any failure here
happens before the model call, so the state machine releases the reservation.

The embedding is billed when it is sent, on that UTC day; the reservation holds the day S2
saw. So S4, like S5, checks right before the call (money/billed_calls.py, the one check
before every billed call) and sends nothing once that day has ended or when the call could
not end within the run's time budget (NotSent, then the release): an embedding sent at
00:00:01 under a 23:59:59 reservation would spend the new day's money on the old day's
account.
"""

from __future__ import annotations

from typing import Any

from steps.lib.grounding import preload
from steps.lib.money import billed_calls, byte_bound, pricing
from steps.lib.providers import models
from steps.lib.runtime import clients, init_phase, observability, wake
from steps.lib.runtime.settings import settings

init_phase.at_init(preload.retrieval_index)  # INIT phase on Lambda; no-op elsewhere

TOP_MATCHES = 5  # the question's matches, ahead of the current page (the article's top five)


@wake.answers_wake  # the wake starts this environment and nothing else
@observability.instrumented("Retrieve")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from steps.lib.grounding import (  # numpy: only the retrieval steps pay for it
        knowledge,
        retrieval,
    )

    s, request = settings(), event["request"]
    embedder = models.query_embedder(s)
    kb = knowledge.load_knowledge(s.knowledge_dir, embedder=embedder.id)
    history, cap, page = request.get("history") or [], s.history_turn_max_chars, request.get("page")
    query = retrieval.follow_up_query(request["message"], history, history_chars=cap, page=page)
    text = byte_bound.cut_to_bound(query.text, pricing.TITAN_QUERY_MAX_BYTES)
    before_embedding(event)
    # The local model embeds each turn apart (local_embedder.conversation_vector); Titan
    # and the stand-in embed the one text.
    embed_turns = getattr(embedder, "embed_turns", None)
    if embed_turns is not None and query.earlier:
        vector, embedding_tokens = embed_turns(query.message, query.earlier)
    else:
        vector, embedding_tokens = embedder.embed_query(text)
    found = retrieval.ground(kb, vector, query, s.grounding_token_budget, TOP_MATCHES)
    chunks = found.chunks
    observability.decision("grounded", chunks=len(chunks), embedding_tokens=embedding_tokens)
    return {
        "grounding": [{"page": c.page, "heading": c.heading, "text": c.text} for c in chunks],
        "sources": sources_of(found.cited),
        "embeddingTokens": embedding_tokens,
    }


def before_embedding(event: dict[str, Any]) -> None:
    """NotSent unless the embedding is sent on the reservation's UTC day and can end within
    the run's budget (money/billed_calls.py; checked last, right before the billed call)."""
    sender = billed_calls.Sender(event["day"], billed_calls.Budget.of(event.get("budget")))
    sender.before("the query embedding", needs_seconds=clients.EMBEDDING.worst)


def sources_of(cited: list[Any]) -> list[dict[str, str]]:
    """The (page, heading, anchor) of each cited chunk, best first, once each; the anchor
    is the one the page gives the section ("" when it gives none: the link is to the page).

    The selection cites the matches it kept (the current page's other sections are
    grounding, not what the answer is about), or the page itself for a message about it
    (selection.py).
    """
    from steps.lib.grounding.knowledge import link_anchor  # loaded by the handler already

    unique = dict.fromkeys((c.page, c.heading, link_anchor(c.id)) for c in cited)
    return [{"page": page, "heading": heading, "anchor": a} for page, heading, a in unique]
