"""Build-time embeddings from the local model (steps/lib/providers/local_embedder.py).

The model is the runtime's own, so index and queries share one space. Embedding a chunk
costs tens of milliseconds of CPU, so a rebuild after an edit must not redo the site: a
cache file keyed by SHA-256(embedder id, chunk text) keeps every vector computed (the
same format as Titan's cache), and only chunks whose text changed are embedded again.
A progress bar goes to the `progress` stream (the CLI passes stderr when it is a TTY).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from steps.lib.providers.local_embedder import DIMENSIONS, MODEL_ID, LocalEmbedder

# Titan's cache and bar serve both build-time embedders (one format, one look).
from .titan import _Cache as Cache
from .titan import _Progress as Progress


class CachedLocalEmbedder:
    id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(
        self,
        model: Callable[[], LocalEmbedder],
        *,
        cache_path: Path | None = None,
        progress: TextIO | None = None,
    ) -> None:
        # Loaded (and its checksums checked) when a chunk needs embedding: a build that
        # is refused earlier, or finds every vector in the cache, never pays for it.
        self.model = model
        self.cache = Cache(cache_path)
        self.progress = progress
        self.embedded = 0  # chunks this run had to embed (the rest came from the cache)

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.id}|{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(text) for text in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        if todo:
            bar = Progress(len(todo), self.progress)

            def advance(done: int) -> None:
                bar.done = done
                bar.draw()

            vectors = self.model().embed(list(todo.values()), progress=advance)
            bar.finish()
            for key, vector in zip(todo, vectors, strict=True):
                self.cache[key] = vector
            self.embedded += len(todo)
            self.cache.save()
        if not keys:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys]).astype(np.float32)
