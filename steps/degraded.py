"""S7 Degraded: a budget tripped (or the operator chose so): the closest section of the site,
as plain text, with its source. Zero model cost: it embeds the query with the local model
on this CPU and ranks by S4's own hybrid score over the local model's vectors (the index's
own, or beside Titan's the second matrix the indexer writes for S7: a Titan embedding
would be a billed call); with `degraded_embedder = "none"` beside Titan, by the lexical
match alone.
"""

from __future__ import annotations

from typing import Any

from steps.lib.providers.degraded_embedder import degraded_embedder_kind
from steps.lib.runtime import init_phase, observability
from steps.lib.runtime.settings import settings
from steps.lib.text import blocks, prose


def _load_index() -> None:
    from steps.lib.grounding import knowledge

    s = settings()
    knowledge.load_knowledge(s.knowledge_dir, embedder=_local_id(s))
    if _local_id(s) is not None:
        from steps.lib.providers import local_embedder

        local_embedder.shared()  # the model and its checksums, at INIT


def _local_id(s: Any) -> str | None:
    """The local model's id when it embeds queries here (free: no provider call), else
    None. Beside Titan its vectors are the index's second matrix (knowledge.py)."""
    if degraded_embedder_kind(s) is None:
        return None
    from steps.lib.providers.local_embedder import MODEL_ID

    return MODEL_ID


init_phase.at_init(_load_index)  # INIT phase on Lambda (the index in memory); no-op elsewhere

FRAMING = "Reduced service: here is the closest section of this site."
NOTHING = (
    "Reduced service: the assistant is resting, and nothing on this site matches that "
    "question closely. The site's pages are still there to browse."
)


PACED = "Today's budget is released through the day; more is released at {time} UTC."


def _local_vector(query: Any) -> Any:
    """The query's vector as S4 computes it with the local model (each turn apart)."""
    from steps.lib.providers import local_embedder

    return local_embedder.conversation_vector(local_embedder.shared(), query.message, query.earlier)


@observability.instrumented("Degraded")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from steps.lib.grounding import (  # numpy: only the retrieval steps pay for it
        knowledge,
        retrieval,
    )

    s, request = settings(), event["request"]
    local = _local_id(s)
    kb = knowledge.load_knowledge(s.knowledge_dir, embedder=local)
    query = retrieval.follow_up_query(request["message"], request.get("history") or [])
    # The local model directly, not the billed seam (models.query_embedder): it is no
    # provider call, and degraded mode must make none.
    vector = _local_vector(query) if local else None
    found = retrieval.degraded_choice(kb, query, page=request.get("page"), query_vector=vector)
    observability.decision("degraded", reason=event.get("reason"), matched=found is not None)
    released = event.get("releasedAt") if event.get("reason") == "paced" else None
    # A paced day says when more is released (and hands the widget the moment).
    paced = {"releasedAt": released} if released else {}
    note = f"\n\n{PACED.format(time=released[11:16])}" if released else ""
    if found is None:
        body = {"reply": NOTHING + note, "degraded": True, "sources": [], **paced}
        return {"statusCode": 200, "body": body}
    chunk = found.chunk
    # The text is plain already (rendered at index time); the heading trail and page come
    # once, as the source the widget links, not repeated above the text. A trailing
    # heading line (the next section's title kept as text) ends nothing; code blocks come
    # fenced, so the widget shows them as code (text/blocks.py).
    text = blocks.with_fences(prose.without_trailing_headings(chunk.text))
    anchor = knowledge.link_anchor(chunk.id)  # the section's id on its page ("": none)
    sources = [{"page": chunk.page, "heading": chunk.heading, "anchor": anchor}]
    also = [{"page": p, "title": retrieval.page_title(kb, p)} for p in found.also]
    body = {"reply": f"{FRAMING}{note}\n\n{text}", "degraded": True, "sources": sources}
    return {"statusCode": 200, "body": {**body, "also": also, **paced}}
