"""S4 Retrieve: embed (previous user turn + message), hybrid-rank the index, cut to budget.

The index is loaded (and checked against the query embedder) before the embedding call, so
a missing or mismatched artifact fails closed without paying for an embedding.
"""

from __future__ import annotations

from typing import Any

from steps.lib import models, observability
from steps.lib.settings import settings


@observability.instrumented("Retrieve")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from steps.lib import knowledge, retrieval  # numpy: only the retrieval steps pay for it

    s, request = settings(), event["request"]
    embedder = models.query_embedder(s)
    kb = knowledge.load_knowledge(s.knowledge_dir, embedder=embedder.id)
    text = retrieval.query_text(request["message"], request.get("history") or [])
    vector, embedding_tokens = embedder.embed_query(text)
    ranked = retrieval.rank(kb, vector, text)
    chunks = retrieval.select_grounding(kb, ranked, request.get("page"), s.grounding_token_budget)
    observability.decision("grounded", chunks=len(chunks), embedding_tokens=embedding_tokens)
    return {
        "grounding": [{"page": c.page, "heading": c.heading, "text": c.text} for c in chunks],
        "sources": _sources(chunks),
        "embeddingTokens": embedding_tokens,
    }


def _sources(chunks: list[Any]) -> list[dict[str, str]]:
    unique = dict.fromkeys((c.page, c.heading) for c in chunks)
    return [{"page": page, "heading": heading} for page, heading in unique]
