"""S7 Degraded: a budget tripped (or the operator chose so): the closest section of the site,
as plain text, with its source. Lexical match only: no embedding, no model, zero cost.
"""

from __future__ import annotations

from typing import Any

from steps.lib.runtime import init_phase, observability
from steps.lib.runtime.settings import settings


def _load_index() -> None:
    from steps.lib.grounding import knowledge

    knowledge.load_knowledge(settings().knowledge_dir)


init_phase.at_init(_load_index)  # INIT phase on Lambda (the index in memory); no-op elsewhere

FRAMING = "Reduced service: here is the closest section of this site."
NOTHING = (
    "Reduced service: the assistant is resting, and nothing on this site matches that "
    "question closely. The site's pages are still there to browse."
)


PACED = "Today's budget is released through the day; more is released at {time} UTC."


@observability.instrumented("Degraded")
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from steps.lib.grounding import (  # numpy: only the retrieval steps pay for it
        knowledge,
        retrieval,
    )

    s, request = settings(), event["request"]
    kb = knowledge.load_knowledge(s.knowledge_dir)
    query = retrieval.follow_up_query(request["message"], request.get("history") or [])
    chunk = retrieval.degraded_answer(kb, query, page=request.get("page"))
    observability.decision("degraded", reason=event.get("reason"), matched=chunk is not None)
    released = event.get("releasedAt") if event.get("reason") == "paced" else None
    # A paced day says when more is released (and hands the widget the moment).
    paced = {"releasedAt": released} if released else {}
    note = f"\n\n{PACED.format(time=released[11:16])}" if released else ""
    if chunk is None:
        body = {"reply": NOTHING + note, "degraded": True, "sources": [], **paced}
        return {"statusCode": 200, "body": body}
    # The text is plain already (rendered at index time); the heading trail and page come
    # once, as the source the widget links, not repeated above the text.
    reply = f"{FRAMING}{note}\n\n{chunk.text}"
    sources = [{"page": chunk.page, "heading": chunk.heading}]
    body = {"reply": reply, "degraded": True, "sources": sources, **paced}
    return {"statusCode": 200, "body": body}
