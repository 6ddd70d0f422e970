"""The bundled knowledge artifact: its format, and loading it once per container.

Three files in one directory, written by `chatguard index` (indexer/artifact.py):

- ``embeddings.npy``: the n x d embedding matrix (float16 on disk, see docs/knowledge.md
  for the measurement behind that choice), rows in chunk order, each L2-normalised;
- ``lexical.bin``: the BM25 postings as raw little-endian arrays, back to back (term
  frequencies and field lengths as float32, chunk numbers as int32): loading them is one
  read, one hash and a zero-copy view per array, no decoding;
- ``knowledge.json``: schema version, embedder id and dimensions, the chunks (page,
  heading trail, plain text, token count, content hash), the vocabulary and where each
  lexical array lies in lexical.bin, the SHA-256 of both binary files, and as its last
  key a checksum of everything before it.

The runtime refuses an artifact whose schema, checksum, shape, terms version or embedder
does not match, with a one-line KnowledgeError saying which, where the index is and how
to rebuild it: the retrieval steps then fail closed.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..runtime.errors import KnowledgeError
from ..text.tokens import TERMS_VERSION, terms

# 2: BM25F postings (term frequencies, field lengths), plain-text chunks;
# 3: the postings as raw arrays in lexical.bin instead of base64 inside knowledge.json.
SCHEMA_VERSION = 3
METADATA_FILE = "knowledge.json"
MATRIX_FILE = "embeddings.npy"
LEXICAL_FILE = "lexical.bin"
ARTIFACT_FILES = (METADATA_FILE, MATRIX_FILE, LEXICAL_FILE)
# The lexical arrays in file order, each with its on-disk type (fixed here, not read from
# the file, so an artifact cannot ask for another). Term frequencies and lengths are
# stored as the float32 that scoring uses: no conversion at load.
LEXICAL_DTYPES = {
    "document_frequency": np.dtype("<i4"),
    "postings": np.dtype("<i4"),
    "text_tf": np.dtype("<f4"),
    "heading_tf": np.dtype("<f4"),
    "text_length": np.dtype("<f4"),
    "heading_length": np.dtype("<f4"),
}
_SEAL_HEAD = b',"checksum":"'
_SEAL_TAIL = b'"}'


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    page: str
    heading: str  # the heading trail, e.g. "Rate limiting > Windows"
    text: str
    tokens: int


@dataclass(frozen=True, slots=True, eq=False)
class Knowledge:
    chunks: tuple[Chunk, ...]
    matrix: np.ndarray  # n x d float32, rows L2-normalised
    embedder: str
    dimensions: int
    vocabulary: Mapping[str, int]  # term -> term id
    idf: np.ndarray  # float32 per term id
    postings_ptr: np.ndarray  # CSR by term: chunks of term t = postings[ptr[t]:ptr[t+1]]
    postings: np.ndarray
    text_tf: np.ndarray  # per posting: the term's count in the chunk's text
    heading_tf: np.ndarray  # per posting: the term's count in the chunk's heading trail
    text_length: np.ndarray  # per chunk: terms in its text
    heading_length: np.ndarray  # per chunk: terms in its heading trail
    page_of: np.ndarray  # per chunk: its page's number (pages in order of first chunk)
    pages: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def page_chunks(self, page: str | None) -> tuple[int, ...]:
        """Indexes of the chunks of one page (document order); empty for unknown pages."""
        return self.pages.get(normalise_page(page), ()) if page else ()


def bedrock_embedder_id(model_id: str, dimensions: int) -> str:
    """The embedder id of a Bedrock embedding model (indexer and query side agree on it)."""
    return f"bedrock:{model_id}:{dimensions}"


def normalise_page(page: str) -> str:
    """'/posts/waf/?x#y' -> '/posts/waf': the form the indexer derives from file paths."""
    path = page.split("#", 1)[0].split("?", 1)[0].strip() or "/"
    path = "/" + path.strip("/")
    for suffix in ("/index.html", "/index.htm", ".html", ".htm", "/index"):
        if path.endswith(suffix):
            path = path[: -len(suffix)] or "/"
    return path


def chunk_document(chunk: Chunk) -> str:
    """What gets embedded and counted for lexical overlap: the heading trail + text."""
    return f"{chunk.heading}\n{chunk.text}"


def idf_weights(document_frequency: np.ndarray, n_chunks: int) -> np.ndarray:
    """BM25's IDF: always > 0, near 0 for a term in every chunk, high for rare terms."""
    df = document_frequency.astype(np.float64)
    return np.log1p((n_chunks - df + 0.5) / (df + 0.5)).astype(np.float32)


def lexical_stats(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The lexical statistics: BM25F postings, term-major, as numpy arrays.

    `terms` is the vocabulary (term id = position). For each term, in term-id order, the
    chunks that hold it (`postings`, ascending) with the term's count in the chunk's text
    (`text_tf`) and in its heading trail (`heading_tf`); `document_frequency` says how many
    postings belong to each term, and `text_length` / `heading_length` give each chunk's
    term count per field. Term-major order means loading is a view and a cumulative sum,
    no sort.
    """
    vocabulary: dict[str, int] = {}
    per_term: dict[int, list[tuple[int, int, int]]] = {}
    text_lengths: list[int] = []
    heading_lengths: list[int] = []
    for index, chunk in enumerate(chunks):
        body, heading = Counter(terms(chunk.text)), Counter(terms(chunk.heading))
        text_lengths.append(sum(body.values()))
        heading_lengths.append(sum(heading.values()))
        for term in sorted(body.keys() | heading.keys()):
            term_id = vocabulary.setdefault(term, len(vocabulary))
            per_term.setdefault(term_id, []).append((index, body[term], heading[term]))
    postings = [per_term[term_id] for term_id in range(len(vocabulary))]
    flat = [entry for entries in postings for entry in entries]
    values = {
        "document_frequency": [len(entries) for entries in postings],
        "postings": [chunk for chunk, _, _ in flat],
        "text_tf": [tf for _, tf, _ in flat],
        "heading_tf": [tf for _, _, tf in flat],
        "text_length": text_lengths,
        "heading_length": heading_lengths,
    }
    return {
        "terms_version": TERMS_VERSION,
        "terms": list(vocabulary),
        **{key: np.asarray(values[key], dtype=dtype) for key, dtype in LEXICAL_DTYPES.items()},
    }


def pack_lexical(lexical: Mapping[str, Any]) -> tuple[bytes, dict[str, list[int]]]:
    """The lexical arrays as lexical.bin's bytes, and each one's [offset, count] in them."""
    parts: list[bytes] = []
    layout: dict[str, list[int]] = {}
    offset = 0
    for key, dtype in LEXICAL_DTYPES.items():
        raw = np.ascontiguousarray(lexical[key], dtype=dtype).tobytes()
        layout[key] = [offset, len(raw) // dtype.itemsize]
        parts.append(raw)
        offset += len(raw)
    return b"".join(parts), layout


def unpack_lexical(raw: bytes | np.ndarray, layout: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Zero-copy views of lexical.bin's arrays (read-only), checked against its size."""
    arrays: dict[str, np.ndarray] = {}
    try:
        for key, dtype in LEXICAL_DTYPES.items():
            offset, count = (int(v) for v in layout[key])
            if offset < 0 or count < 0 or offset + count * dtype.itemsize > len(raw):
                raise ValueError(f"{key} lies outside the file")
            arrays[key] = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    except (KeyError, ValueError, TypeError) as exc:
        raise KnowledgeError(f"{LEXICAL_FILE} is unreadable: {exc}") from exc
    return arrays


def seal(metadata: Mapping[str, Any]) -> bytes:
    """The bytes of knowledge.json: compact JSON whose LAST key is its own SHA-256.

    The checksum covers the exact bytes before it, so verifying costs one hash over the
    file instead of a re-serialisation of everything (a third of the load time otherwise).
    """
    body = {k: v for k, v in metadata.items() if k != "checksum"}
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    digest = hashlib.sha256(raw).hexdigest().encode("ascii")
    return raw[:-1] + _SEAL_HEAD + digest + _SEAL_TAIL


def sealed(raw: bytes) -> bool:
    """True when `raw` ends with the checksum `seal` wrote and the bytes still match it."""
    size = len(_SEAL_HEAD) + 64 + len(_SEAL_TAIL)
    if (
        len(raw) <= size
        or not raw.endswith(_SEAL_TAIL)
        or raw[-size:][: len(_SEAL_HEAD)] != _SEAL_HEAD
    ):
        return False
    digest = hashlib.sha256(raw[:-size] + b"}").hexdigest().encode("ascii")
    return hmac.compare_digest(digest, raw[-64 - len(_SEAL_TAIL) : -len(_SEAL_TAIL)])


def build_knowledge(
    chunks: Sequence[Chunk], matrix: np.ndarray, embedder: str, lexical: Mapping[str, Any]
) -> Knowledge:
    """Assemble the in-memory index (also used by tests and the benchmark)."""
    n = len(chunks)
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise KnowledgeError(f"matrix shape {matrix.shape} does not match {n} chunks")
    term_list: list[str] = list(lexical["terms"])
    try:
        arrays = {key: np.asarray(lexical[key], dtype=t) for key, t in LEXICAL_DTYPES.items()}
    except (KeyError, ValueError, TypeError) as exc:
        raise KnowledgeError(f"lexical statistics are unreadable: {exc}") from exc
    df, postings = arrays["document_frequency"], arrays["postings"]
    if (
        df.shape[0] != len(term_list)
        or int(df.sum()) != postings.shape[0]
        or any(arrays[k].shape != postings.shape for k in ("text_tf", "heading_tf"))
        or any(arrays[k].shape[0] != n for k in ("text_length", "heading_length"))
        or (postings.size and not 0 <= int(postings.min()) <= int(postings.max()) < n)
    ):
        raise KnowledgeError("lexical statistics do not match the chunks")
    postings_ptr = np.zeros(len(term_list) + 1, dtype=np.int64)
    np.cumsum(df, out=postings_ptr[1:])
    pages: dict[str, list[int]] = {}
    for index, chunk in enumerate(chunks):
        pages.setdefault(chunk.page, []).append(index)
    numbers: dict[str, int] = {}
    return Knowledge(
        chunks=tuple(chunks),
        matrix=np.ascontiguousarray(matrix, dtype=np.float32),
        embedder=embedder,
        dimensions=int(matrix.shape[1]),
        vocabulary=dict(zip(term_list, range(len(term_list)), strict=True)),
        idf=idf_weights(df, n),
        postings_ptr=postings_ptr,
        postings=postings,
        text_tf=arrays["text_tf"],
        heading_tf=arrays["heading_tf"],
        text_length=arrays["text_length"],
        heading_length=arrays["heading_length"],
        page_of=np.fromiter(
            (numbers.setdefault(chunk.page, len(numbers)) for chunk in chunks), np.int64, n
        ),
        pages={page: tuple(indexes) for page, indexes in pages.items()},
    )


@cache
def load_knowledge(directory: Path, *, embedder: str | None = None) -> Knowledge:
    """Load and verify the artifact once per (directory, embedder) per process.

    Failures are not cached (functools.cache does not store exceptions), so a container
    that hit a bad artifact retries on the next request instead of serving stale state.
    """
    return _load(Path(directory), embedder)


def _load(directory: Path, embedder: str | None) -> Knowledge:
    metadata = _read_metadata(directory)
    if embedder is not None and metadata["embedder"]["id"] != embedder:
        raise incompatible(
            directory,
            f"was built with embedder {metadata['embedder']['id']!r}, but this runtime embeds "
            f"queries with {embedder!r}",
            embedder,
        )
    matrix = _read_matrix(directory, metadata)
    lexical = {**metadata["lexical"], **_read_lexical(directory, metadata["lexical"])}
    chunks = [
        Chunk(c["id"], c["page"], c["heading"], c["text"], c["tokens"]) for c in metadata["chunks"]
    ]
    return build_knowledge(chunks, matrix, metadata["embedder"]["id"], lexical)


def incompatible(directory: Path, why: str, embedder: str | None = None) -> KnowledgeError:
    """One line for an index this runtime cannot use: where it is, why, how to rebuild it.

    Said when the step loads the index (S4 before any embedding, S7 before answering) and
    by `chatguard serve` at start, so an operator reads it before a visitor sees a 503.
    """
    titan = " --embedder titan" if embedder and embedder.startswith("bedrock:") else ""
    return KnowledgeError(
        f"the knowledge index in {directory} {why}: rebuild it with "
        f"`chatguard index SITE_DIR --out {directory}{titan}`"
    )


def _read_metadata(directory: Path) -> dict[str, Any]:
    path = directory / METADATA_FILE
    try:
        raw = path.read_bytes()
        metadata = json.loads(raw)
    except FileNotFoundError:
        raise KnowledgeError(
            f"no knowledge artifact at {path.name} in {directory.name}/: "
            "run `chatguard index SITE_DIR`"
        ) from None
    except (OSError, ValueError) as exc:
        raise KnowledgeError(f"{METADATA_FILE} is unreadable: {exc}") from exc
    if not isinstance(metadata, dict):
        raise KnowledgeError(f"{METADATA_FILE} is not a JSON object")
    if metadata.get("schema") != SCHEMA_VERSION:
        raise incompatible(
            directory,
            f"has schema {metadata.get('schema')!r}, this runtime reads schema {SCHEMA_VERSION}",
        )
    if not sealed(raw):
        raise KnowledgeError(f"{METADATA_FILE} checksum mismatch: the file is corrupted")
    if metadata["lexical"].get("terms_version") != TERMS_VERSION:
        raise incompatible(
            directory,
            f"was tokenised with terms version {metadata['lexical'].get('terms_version')!r}, "
            f"this runtime uses {TERMS_VERSION}",
        )
    return metadata


def _read_verified(path: Path, sha256: object) -> np.ndarray:
    """The file's bytes as one uint8 array (read straight into it: no second copy), after
    one SHA-256 over them matches the checksum knowledge.json pins."""
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except (OSError, ValueError) as exc:
        raise KnowledgeError(f"{path.name} is unreadable: {exc}") from exc
    if hashlib.sha256(raw.data).hexdigest() != sha256:
        raise KnowledgeError(f"{path.name} checksum mismatch: corrupted or from another build")
    raw.setflags(write=False)  # the arrays viewing it are read-only too
    return raw


def _read_matrix(directory: Path, metadata: Mapping[str, Any]) -> np.ndarray:
    raw = _read_verified(directory / MATRIX_FILE, metadata["matrix"]["sha256"])
    try:  # the .npy header, then a view of the data that follows it (np.load would copy)
        header = io.BytesIO(raw[:_NPY_HEADER_MAX].tobytes())
        version = np.lib.format.read_magic(header)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(header)
        if fortran or dtype.hasobject:
            raise ValueError("not a C-ordered numeric array")
        count = int(np.prod(shape)) if shape else 1
        matrix = np.frombuffer(raw, dtype=dtype, count=count, offset=header.tell())
        matrix = matrix.reshape(shape)
    except (ValueError, TypeError) as exc:
        raise KnowledgeError(f"{MATRIX_FILE} is not a valid .npy file: {exc}") from exc
    expected = (len(metadata["chunks"]), int(metadata["embedder"]["dimensions"]))
    if matrix.shape != expected or matrix.dtype not in (np.float16, np.float32):
        raise incompatible(
            directory, f"holds a {matrix.dtype} {matrix.shape} matrix, not {expected}"
        )
    # Ranking runs in float32: numpy has no fast float16 matrix product.
    return widen(matrix) if matrix.dtype == np.float16 else np.asarray(matrix, np.float32)


_NPY_HEADER_MAX = 4096  # .npy headers are padded to 64 bytes; ours is 128
_F16_TO_F32_SCALE = np.float32(2.0**112)  # 2^(127 - 15): float32 bias minus float16 bias
_SIGN_AND_MAGNITUDE = np.int32(-0x70000001)  # 0x8FFFFFFF: bit 31 and bits 0-27


def widen(half: np.ndarray) -> np.ndarray:
    """float16 -> float32, exactly, in half the time of `astype` (docs/benchmarks.md).

    numpy converts float16 one element at a time. Here each value, sign-extended to
    int32 and shifted left by 13, has its magnitude bits where a float32 keeps exponent
    and mantissa and its sign in bit 31 (the mask drops the sign's copies in bits 28-30);
    one multiplication by 2^112 then fixes the exponent bias, subnormals and zero
    included. Not for infinities or NaN, which the indexer never writes (it refuses a
    non-finite matrix). One new array, three passes over it.
    """
    bits = np.ascontiguousarray(half).view(np.int16).astype(np.int32)
    bits <<= np.int32(13)
    bits &= _SIGN_AND_MAGNITUDE
    out = bits.view(np.float32)
    out *= _F16_TO_F32_SCALE
    return out


def _read_lexical(directory: Path, spec: Mapping[str, Any]) -> dict[str, np.ndarray]:
    raw = _read_verified(directory / LEXICAL_FILE, spec.get("sha256"))
    return unpack_lexical(raw, spec.get("layout") or {})


def content_hash(text: str) -> str:
    """Short content hash of a chunk's document, stored with each chunk in knowledge.json."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
