"""What S4 loads at INIT besides its clients: the index, checked as its handler will ask.

Kept apart from ``init_phase`` so that the gate steps, which import that module through
observability, never import knowledge (numpy) or the model seams; imported lazily here so
that importing S4 off Lambda stays as light as before.
"""

from __future__ import annotations

from ..runtime.settings import settings


def retrieval_index() -> None:
    from ..providers import models
    from . import knowledge

    s = settings()
    knowledge.load_knowledge(s.knowledge_dir, embedder=models.query_embedder(s).id)
