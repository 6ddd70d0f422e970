"""Build-time embeddings from Amazon Titan Text Embeddings V2 on Bedrock.

- one `invoke_model` per chunk (Titan V2 embeds one text per call), run on a small thread
  pool so at most `concurrency` calls are in flight;
- ThrottlingException (and 503s) back off exponentially with jitter, then retry; any
  other error stops the build (nothing is written);
- a cache file keyed by SHA-256(model, dimensions, text) keeps every vector already
  paid for, so a rebuild after editing one page re-embeds only that page's changed
  chunks; the cache is saved even when the build fails half-way;
- a progress bar goes to the `progress` stream (the CLI passes stderr).

The boto3 client is injected (tests pass a fake that counts calls), never built at import.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from steps.lib.grounding.knowledge import bedrock_embedder_id

from .titan_model import MODEL_ID

RETRYABLE = frozenset({"ThrottlingException", "ServiceUnavailableException"})


class EmbeddingFailed(Exception):
    """Titan refused or kept throttling; the build stops and writes nothing."""


class TitanEmbedder:
    def __init__(
        self,
        client: Any,
        *,
        model_id: str = MODEL_ID,
        dimensions: int = 1024,
        concurrency: int = 4,
        cache_path: Path | None = None,
        progress: TextIO | None = None,
        max_attempts: int = 8,
        base_delay: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimensions not in (256, 512, 1024):
            raise ValueError("Titan Text Embeddings V2 offers 256, 512 or 1024 dimensions")
        self.client = client
        self.model_id = model_id
        self.dimensions = dimensions
        self.concurrency = max(1, concurrency)
        self.cache = _Cache(cache_path)
        self.progress = progress
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep
        self.input_tokens = 0  # what Titan reported for the calls this run made
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return bedrock_embedder_id(self.model_id, self.dimensions)

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model_id}|{self.dimensions}|{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(text) for text in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        try:
            self._fetch(todo)
        finally:
            self.cache.save()  # keep what was paid for, even when a later call failed
        matrix = np.stack([self.cache[k] for k in keys]) if keys else np.zeros((0, self.dimensions))
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def _fetch(self, todo: dict[str, str]) -> None:
        bar = _Progress(len(todo), self.progress)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._embed_one, text): key for key, text in todo.items()}
            for future in as_completed(futures):
                self.cache[futures[future]] = future.result()
                bar.advance()
        bar.finish()

    def _embed_one(self, text: str) -> np.ndarray:
        body = json.dumps({"inputText": text, "dimensions": self.dimensions, "normalize": True})
        for attempt in range(self.max_attempts):
            try:
                response = self.client.invoke_model(
                    modelId=self.model_id,
                    body=body,
                    contentType="application/json",
                    accept="application/json",
                )
                return self._parse(response)
            except Exception as exc:
                code = _error_code(exc)
                if code not in RETRYABLE or attempt + 1 == self.max_attempts:
                    raise EmbeddingFailed(f"Titan embedding failed ({code or exc})") from exc
                delay = self.base_delay * 2**attempt
                self.sleep(delay * (0.5 + random.random() / 2))  # jitter spreads the retries
        raise AssertionError("unreachable")

    def _parse(self, response: dict[str, Any]) -> np.ndarray:
        payload = json.loads(response["body"].read())
        vector = np.asarray(payload["embedding"], dtype=np.float32)
        if vector.shape != (self.dimensions,) or not np.all(np.isfinite(vector)):
            raise EmbeddingFailed(f"Titan returned a vector of shape {vector.shape}")
        with self._lock:
            self.input_tokens += int(payload.get("inputTextTokenCount", 0))
        return vector


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


class _Cache:
    """content key -> vector, persisted as JSON with base64 float32 (no pickle)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            stored = json.loads(path.read_text(encoding="utf-8"))
            for key, blob in stored.get("vectors", {}).items():
                self.vectors[key] = np.frombuffer(base64.b64decode(blob), dtype=np.float32)

    def __contains__(self, key: object) -> bool:
        return key in self.vectors

    def __getitem__(self, key: str) -> np.ndarray:
        return self.vectors[key]

    def __setitem__(self, key: str, vector: np.ndarray) -> None:
        self.vectors[key] = vector

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        blobs = {
            k: base64.b64encode(v.astype(np.float32).tobytes()).decode()
            for k, v in sorted(self.vectors.items())
        }
        temporary = self.path.with_suffix(self.path.suffix + ".tmp")
        temporary.write_text(json.dumps({"format": 1, "vectors": blobs}), encoding="utf-8")
        temporary.replace(self.path)


class _Progress:
    def __init__(self, total: int, stream: TextIO | None, width: int = 30) -> None:
        self.total, self.stream, self.width, self.done = total, stream, width, 0
        self.draw()

    def advance(self) -> None:
        self.done += 1
        self.draw()

    def draw(self) -> None:
        if self.stream is None or self.total == 0:
            return
        filled = self.width * self.done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\rembedding [{bar}] {self.done}/{self.total}")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.total:
            self.stream.write("\n")
