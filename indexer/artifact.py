"""Writing the knowledge artifact (the format itself lives in steps/lib/grounding/knowledge.py).

The three files are written into a fresh temporary directory beside the output and then
swapped in, so a failed or interrupted build never leaves a half-written artifact for
the runtime to load: the previous artifact stays until the new one is complete.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from steps.lib.grounding.knowledge import (
    LEXICAL_FILE,
    MATRIX_FILE,
    METADATA_FILE,
    SCHEMA_VERSION,
    Chunk,
    chunk_document,
    content_hash,
    lexical_stats,
    pack_lexical,
    seal,
)

# float16 on disk: half the bytes of float32 and no ranking change on the sample site
# (docs/benchmarks.md, "float16 vs float32"); the runtime widens it to float32 on load.
DISK_DTYPE = np.float16


def artifact_metadata(
    chunks: Sequence[Chunk],
    matrix_bytes: bytes,
    shape: tuple[int, int],
    embedder: str,
    *,
    dtype: str,
    lexical_bytes: bytes,
    lexical_layout: dict[str, list[int]],
    terms: list[str],
    terms_version: int,
) -> dict[str, Any]:
    documents = [chunk_document(chunk) for chunk in chunks]
    metadata: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "embedder": {"id": embedder, "dimensions": shape[1]},
        "matrix": {
            "file": MATRIX_FILE,
            "dtype": dtype,
            "shape": list(shape),
            "sha256": hashlib.sha256(matrix_bytes).hexdigest(),
        },
        "chunks": [
            {
                "id": c.id,
                "page": c.page,
                "heading": c.heading,
                "text": c.text,
                "tokens": c.tokens,
                "hash": content_hash(doc),
            }
            for c, doc in zip(chunks, documents, strict=True)
        ],
        "lexical": {
            "terms_version": terms_version,
            "terms": terms,
            "file": LEXICAL_FILE,
            "sha256": hashlib.sha256(lexical_bytes).hexdigest(),
            "layout": lexical_layout,
        },
    }
    return metadata


def npy_bytes(matrix: np.ndarray, dtype: type[np.floating[Any]] = DISK_DTYPE) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(matrix, dtype=dtype), allow_pickle=False)
    return buffer.getvalue()


def write_artifact(
    out: Path,
    chunks: Sequence[Chunk],
    matrix: np.ndarray,
    embedder: str,
    *,
    dtype: type[np.floating[Any]] = DISK_DTYPE,
) -> dict[str, Any]:
    """Write the three files atomically (as a directory swap); returns the metadata
    (unsealed)."""
    if not np.all(np.isfinite(matrix)):
        raise ValueError("embedding matrix holds NaN or infinity; refusing to write it")
    raw = npy_bytes(matrix, dtype)
    lexical = lexical_stats(chunks)
    lexical_bytes, layout = pack_lexical(lexical)
    metadata = artifact_metadata(
        chunks,
        raw,
        (int(matrix.shape[0]), int(matrix.shape[1])),
        embedder,
        dtype=np.dtype(dtype).name,
        lexical_bytes=lexical_bytes,
        lexical_layout=layout,
        terms=lexical["terms"],
        terms_version=lexical["terms_version"],
    )
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        (staging / MATRIX_FILE).write_bytes(raw)
        (staging / LEXICAL_FILE).write_bytes(lexical_bytes)
        (staging / METADATA_FILE).write_bytes(seal(metadata))
        _swap(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return metadata


def _swap(staging: Path, out: Path) -> None:
    if not out.exists():
        staging.rename(out)
        return
    # Replace only our files, so anything else an operator keeps in `out` survives; each
    # os.replace is atomic, and the metadata (which pins both binary hashes) goes last.
    for name in (MATRIX_FILE, LEXICAL_FILE, METADATA_FILE):
        (staging / name).replace(out / name)
