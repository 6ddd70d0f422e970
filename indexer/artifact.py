"""Writing the knowledge artifact (the format itself lives in steps/lib/grounding/knowledge.py).

The files are written into a fresh temporary directory beside the output and then
swapped in, so a failed or interrupted build never leaves a half-written artifact for
the runtime to load: the previous artifact stays until the new one is complete.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from steps.lib.grounding.knowledge import (
    DEGRADED_MATRIX_FILE,
    INDEX_FILE,
    MATRIX_FILE,
    METADATA_FILE,
    SCHEMA_VERSION,
    Chunk,
    checksum,
    index_arrays,
    lexical_stats,
    pack_index,
    seal,
)


@dataclass(frozen=True, slots=True)
class Degraded:
    """The degraded answer's vectors: the chunks embedded by a free (local) embedder."""

    matrix: np.ndarray
    embedder: str


# float16 on disk: half the bytes of float32 and no ranking change on the sample site
# (docs/benchmarks.md, "float16 vs float32"); the runtime widens it to float32 on load.
DISK_DTYPE = np.float16


def artifact_metadata(
    n_chunks: int,
    matrix_part: dict[str, Any],
    *,
    index_bytes: bytes,
    layout: dict[str, list[int]],
    terms_version: int,
) -> dict[str, Any]:
    """knowledge.json's header (unsealed): everything else lies in the binary files.
    `matrix_part` is the own matrix's (stored_matrix)."""
    return {
        "schema": SCHEMA_VERSION,
        **matrix_part,
        "chunks": n_chunks,
        "index": {
            "file": INDEX_FILE,
            "terms_version": terms_version,
            "crc32": checksum(index_bytes),
            "layout": layout,
        },
    }


def stored_matrix(
    matrix: np.ndarray, embedder: str, *, dtype: type[np.floating[Any]], file: str
) -> tuple[bytes, dict[str, Any]]:
    """A matrix's file bytes and its part of the header: who embedded it, and where and how
    it is stored."""
    raw = npy_bytes(matrix, dtype)
    rows, dimensions = (int(n) for n in matrix.shape)
    name = np.dtype(dtype).name
    return raw, {
        "embedder": {"id": embedder, "dimensions": dimensions},
        "matrix": {
            "file": file,
            "dtype": name,
            "shape": [rows, dimensions],
            # where the data starts after the .npy header: the runtime reads no header
            "offset": len(raw) - rows * dimensions * np.dtype(dtype).itemsize,
            "crc32": checksum(raw),
        },
    }


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
    site: dict[str, Any] | None = None,
    degraded: Degraded | None = None,
) -> dict[str, Any]:
    """Write the files atomically (as a directory swap); returns the metadata (unsealed).
    `site` is what the index was built from (indexer/provenance.py), kept in the header
    for the commands that pair an index with a site; the runtime ignores it. `degraded`:
    the same chunks embedded by the degraded answer's free embedder, written beside."""
    matrices = [matrix] if degraded is None else [matrix, degraded.matrix]
    if not all(np.all(np.isfinite(m)) for m in matrices):
        raise ValueError("embedding matrix holds NaN or infinity; refusing to write it")
    if degraded is not None and degraded.matrix.shape[0] != matrix.shape[0]:
        raise ValueError("the degraded answer's matrix does not have one row per chunk")
    raw, own = stored_matrix(matrix, embedder, dtype=dtype, file=MATRIX_FILE)
    lexical = lexical_stats(chunks)
    index_bytes, layout = pack_index(index_arrays(chunks, lexical))
    metadata = artifact_metadata(
        len(chunks),
        own,
        index_bytes=index_bytes,
        layout=layout,
        terms_version=lexical["terms_version"],
    )
    files = {MATRIX_FILE: raw, INDEX_FILE: index_bytes}
    if degraded is not None:
        files[DEGRADED_MATRIX_FILE], metadata["degraded"] = stored_matrix(
            degraded.matrix, degraded.embedder, dtype=dtype, file=DEGRADED_MATRIX_FILE
        )
    if site is not None:
        metadata["site"] = site
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        (staging / METADATA_FILE).write_bytes(seal(metadata))
        _swap(staging, out, tuple(files))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return metadata


def _swap(staging: Path, out: Path, binaries: tuple[str, ...]) -> None:
    if not out.exists():
        staging.rename(out)
        return
    # Replace only our files, so anything else an operator keeps in `out` survives; each
    # os.replace is atomic, and the metadata (which pins the binaries' checksums) goes last.
    for name in (*binaries, METADATA_FILE):
        (staging / name).replace(out / name)
    if DEGRADED_MATRIX_FILE not in binaries:  # a matrix the new header no longer names
        (out / DEGRADED_MATRIX_FILE).unlink(missing_ok=True)
