"""The bundled knowledge artifact: its format, and loading it once per container.

Three files in one directory, written by `chatguard index` (indexer/artifact.py):

- ``embeddings.npy``: the n x d embedding matrix (float16 on disk, see docs/knowledge.md
  for the measurement behind that choice), rows in chunk order, each L2-normalised;
- ``index.bin``: raw little-endian arrays back to back: the BM25 postings (term
  frequencies and field lengths as float32, chunk numbers as int32), and every string
  the runtime needs (the vocabulary, sorted; each chunk's id, heading trail and plain
  text; the page paths) as one UTF-8 blob per kind with an int32 array of end offsets;
  and each chunk's links to other indexed pages' sections (LINK_DTYPES: optional, so an
  index built before they were recorded still loads, with none; rebuild it to have S7
  follow them);
- ``embeddings-degraded.npy`` (optional): the same chunks embedded by the local model,
  written beside a billed embedder's matrix (Titan's) so the degraded answer (S7), which
  must make no billed call, still ranks by meaning (``knowledge.json``'s ``degraded``
  key names its embedder and pins its checksum; an index without it loads as before);
- ``knowledge.json``: a small header: schema version, embedder id and dimensions, the
  chunk count, the terms version, where each array lies in index.bin, the CRC-32 of
  both binary files, what the index was built from (``site``: the site folder's name and
  a digest of each page file, indexer/provenance.py; the commands that pair an index with
  a site read it, this runtime does not), and as its last key a CRC-32 of everything
  before it.

Loading is two reads, two CRCs and a zero-copy view per array: no JSON over the chunks,
no dictionary of the vocabulary (a lookup is a binary search over the sorted blob), and
a chunk's strings are decoded only when something reads that chunk (an answer reads
five). docs/benchmarks.md ("Cold load") measures it against one JSON file.

The runtime refuses an artifact whose schema, checksum, shape, terms version or embedder
does not match, with a one-line KnowledgeError saying which, where the index is and how
to rebuild it: the retrieval steps then fail closed.
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..runtime.errors import KnowledgeError
from ..text.tokens import TERMS_VERSION, terms

# 2: BM25F postings (term frequencies, field lengths), plain-text chunks;
# 3: the postings as raw arrays in lexical.bin instead of base64 inside knowledge.json;
# 4: the chunks' strings and the vocabulary in index.bin too (knowledge.json is a header),
#    CRC-32 instead of SHA-256 for the checksums.
SCHEMA_VERSION = 4
METADATA_FILE = "knowledge.json"
MATRIX_FILE = "embeddings.npy"
INDEX_FILE = "index.bin"
ARTIFACT_FILES = (METADATA_FILE, MATRIX_FILE, INDEX_FILE)
DEGRADED_MATRIX_FILE = "embeddings-degraded.npy"  # optional: see the module docstring
# The arrays of index.bin in file order, each with its on-disk type (fixed here, not read
# from the file, so an artifact cannot ask for another). Term frequencies and lengths are
# stored as the float32 that scoring uses: no conversion at load. A `*_ends` array holds
# the end offset of each string in the `*_blob` after it (UTF-8 bytes).
LEXICAL_DTYPES: dict[str, np.dtype[Any]] = {
    "document_frequency": np.dtype("<i4"),
    "postings": np.dtype("<i4"),
    "text_tf": np.dtype("<f4"),
    "heading_tf": np.dtype("<f4"),
    "text_length": np.dtype("<f4"),
    "heading_length": np.dtype("<f4"),
}
# In index.bin the document frequencies are stored as what ranking reads: each term's
# start in the postings (CSR pointers, one more than the terms) and its IDF.
DERIVED_DTYPES: dict[str, np.dtype[Any]] = {
    "postings_ptr": np.dtype("<i4"),
    "idf": np.dtype("<f4"),
}
STRING_DTYPES: dict[str, np.dtype[Any]] = {
    "term_ends": np.dtype("<i4"),  # the vocabulary, sorted by UTF-8 bytes: term id = place
    "term_blob": np.dtype("u1"),
    "chunk_ends": np.dtype("<i4"),  # per chunk: its id, heading trail, text
    "chunk_blob": np.dtype("u1"),
    "chunk_tokens": np.dtype("<i4"),
    "chunk_page": np.dtype("<i4"),  # per chunk: its page's number
    "page_ends": np.dtype("<i4"),  # page paths, by number (order of first chunk)
    "page_blob": np.dtype("u1"),
}
INDEX_DTYPES: dict[str, np.dtype[Any]] = {
    **DERIVED_DTYPES,
    **{k: v for k, v in LEXICAL_DTYPES.items() if k != "document_frequency"},
    **STRING_DTYPES,
}
# Optional (an index built before chunks' links were recorded lacks them and still loads,
# with no links): per chunk, where its links start in the link strings (CSR, one more
# than the chunks); the strings are each link's target ("page#anchor") and text in turn.
LINK_DTYPES: dict[str, np.dtype[Any]] = {
    "link_ptr": np.dtype("<i4"),
    "link_ends": np.dtype("<i4"),
    "link_blob": np.dtype("u1"),
}
_FIELDS_PER_LINK = 2  # target, text
_SEAL_HEAD = b',"checksum":"'
_SEAL_TAIL = b'"}'
_SEAL_DIGITS = 8
_FIELDS_PER_CHUNK = 3  # id, heading trail, text


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    page: str
    heading: str  # the heading trail, e.g. "Rate limiting > Windows"
    text: str
    tokens: int
    # Links in the section's own text to another indexed page's section: (that chunk's
    # id-style target "page#anchor", the link's text). Written by the indexer
    # (build.resolve_links); an index built before they were recorded has none.
    links: tuple[tuple[str, str], ...] = field(default=(), compare=False)


class Strings(Sequence[str]):
    """Strings stored as one UTF-8 blob and their end offsets; item i decoded on access."""

    __slots__ = ("_blob", "_ends")

    def __init__(self, blob: bytes | np.ndarray, ends: np.ndarray) -> None:
        self._blob: bytes | memoryview = blob if isinstance(blob, bytes) else blob.data
        self._ends = ends

    def __len__(self) -> int:
        return int(self._ends.shape[0])

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        start = int(self._ends[index - 1]) if index else 0
        return bytes(self._blob[start : int(self._ends[index])]).decode("utf-8")


class Vocabulary(Mapping[str, int]):
    """term -> term id over the sorted vocabulary: a binary search per new term, so loading
    builds no dictionary of every term (the load then costs the same for any vocabulary).

    Each term looked up is remembered (found or not), so a container's steady state is a
    dictionary lookup; the memo is emptied past MEMO_LIMIT entries, so a flood of
    made-up words cannot grow it without bound.
    """

    __slots__ = ("_memo", "_terms")
    MEMO_LIMIT = 1 << 16

    def __init__(self, sorted_terms: Sequence[str]) -> None:
        self._terms = sorted_terms
        self._memo: dict[str, int] = {}

    def _search(self, term: str) -> int:
        place = bisect.bisect_left(self._terms, term)
        return place if place < len(self._terms) and self._terms[place] == term else -1

    def __getitem__(self, term: str) -> int:
        found = self._memo.get(term)
        if found is None:
            if len(self._memo) >= self.MEMO_LIMIT:
                self._memo.clear()
            found = self._memo[term] = self._search(term)
        if found < 0:
            raise KeyError(term)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._terms)

    def __len__(self) -> int:
        return len(self._terms)


class ChunkTable(Sequence[Chunk]):
    """The chunks of a loaded artifact, each built from index.bin the first time it is read."""

    __slots__ = ("_cache", "_page_of", "_pages", "_strings", "_tokens")

    def __init__(
        self, strings: Strings, tokens: np.ndarray, page_of: np.ndarray, pages: Strings
    ) -> None:
        self._strings, self._tokens, self._page_of, self._pages = strings, tokens, page_of, pages
        self._cache: list[Chunk | None] = [None] * int(tokens.shape[0])

    def __len__(self) -> int:
        return len(self._cache)

    @overload
    def __getitem__(self, index: int) -> Chunk: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Chunk]: ...
    def __getitem__(self, index: int | slice) -> Chunk | Sequence[Chunk]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        chunk = self._cache[index]  # raises IndexError out of range
        if chunk is None:
            index %= len(self._cache)
            first = _FIELDS_PER_CHUNK * index
            chunk = Chunk(
                self._strings[first],
                self._pages[int(self._page_of[index])],
                self._strings[first + 1],
                self._strings[first + 2],
                int(self._tokens[index]),
            )
            self._cache[index] = chunk
        return chunk


class PageIndex(Mapping[str, tuple[int, ...]]):
    """page path -> its chunk indexes (document order), worked out on first use: only a
    request from a page the index knows needs it. Keyed by `normalise_page` of each
    chunk's page (its link, `/posts/waf.html` or `/posts/waf` by the permalink setting),
    the form a visitor's `page` is looked up in."""

    __slots__ = ("_names", "_page_of", "_table")

    def __init__(self, names: Sequence[str], page_of: np.ndarray) -> None:
        self._names, self._page_of = names, page_of
        self._table: dict[str, tuple[int, ...]] | None = None

    def _built(self) -> dict[str, tuple[int, ...]]:
        if self._table is None:
            grouped: list[list[int]] = [[] for _ in range(len(self._names))]
            for index, number in enumerate(self._page_of.tolist()):
                grouped[number].append(index)
            self._table = {
                normalise_page(name): tuple(group)
                for name, group in zip(self._names, grouped, strict=True)
            }
        return self._table

    def __getitem__(self, page: str) -> tuple[int, ...]:
        return self._built()[page]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True, slots=True, eq=False)
class Knowledge:
    chunks: Sequence[Chunk]
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
    # per page number: its first chunk (title, description or opening paragraph), derived
    # at load; ranking reads the page's topic from it (retrieval.page_parts)
    page_head: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    # the chunks' links (LINK_DTYPES): empty for an index built before they were recorded
    link_ptr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    link_strings: Sequence[str] = ()

    def links_of(self, index: int) -> list[tuple[str, str]]:
        """Chunk `index`'s links to other indexed pages' sections: (page#anchor, text)."""
        if self.link_ptr.size == 0:
            return []
        start, end = (int(v) * _FIELDS_PER_LINK for v in self.link_ptr[index : index + 2])
        flat = self.link_strings[start:end]
        return list(zip(flat[0::2], flat[1::2], strict=True))

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


# A chunk's id is "page#fragment". What follows ANCHOR_PART is not an anchor of the page:
# a split section's later parts ("#usage~2") and, on an HTML page, a heading the page gives
# no id ("#~usage"). The indexer writes ids so (indexer/chunking.py); a source link uses
# link_anchor().
ANCHOR_PART = "~"


def link_anchor(chunk_id: str) -> str:
    """The fragment a link to a chunk's section carries ("" for the page itself)."""
    return chunk_id.partition("#")[2].partition(ANCHOR_PART)[0]


def chunk_document(chunk: Chunk) -> str:
    """What gets embedded and counted for lexical overlap: the heading trail + text."""
    return f"{chunk.heading}\n{chunk.text}"


def postings_pointers(document_frequency: np.ndarray) -> np.ndarray:
    """CSR pointers: the postings of term t lie at [ptr[t], ptr[t + 1])."""
    pointers = np.zeros(document_frequency.shape[0] + 1, dtype=np.int64)
    np.cumsum(document_frequency, out=pointers[1:])
    return pointers


def idf_weights(document_frequency: np.ndarray, n_chunks: int) -> np.ndarray:
    """BM25's IDF: always > 0, near 0 for a term in every chunk, high for rare terms."""
    df = document_frequency.astype(np.float64)
    return np.log1p((n_chunks - df + 0.5) / (df + 0.5)).astype(np.float32)


def _utf8_order(term: str) -> bytes:
    return term.encode("utf-8")


def lexical_stats(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The lexical statistics: BM25F postings, term-major, as numpy arrays.

    `terms` is the vocabulary sorted by UTF-8 bytes (term id = position; the runtime
    looks a term up by binary search). For each term, in term-id order, the chunks that
    hold it (`postings`, ascending) with the term's count in the chunk's text
    (`text_tf`) and in its heading trail (`heading_tf`); `document_frequency` says how
    many postings belong to each term, and `text_length` / `heading_length` give each
    chunk's term count per field. Term-major order means loading is a view and a
    cumulative sum, no sort.
    """
    per_term: dict[str, list[tuple[int, int, int]]] = {}
    text_lengths: list[int] = []
    heading_lengths: list[int] = []
    for index, chunk in enumerate(chunks):
        body, heading = Counter(terms(chunk.text)), Counter(terms(chunk.heading))
        text_lengths.append(sum(body.values()))
        heading_lengths.append(sum(heading.values()))
        for term in body.keys() | heading.keys():
            per_term.setdefault(term, []).append((index, body[term], heading[term]))
    vocabulary = sorted(per_term, key=_utf8_order)
    postings = [per_term[term] for term in vocabulary]  # chunks ascending within each
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
        "terms": vocabulary,
        **{key: np.asarray(values[key], dtype=dtype) for key, dtype in LEXICAL_DTYPES.items()},
    }


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(end offsets, UTF-8 blob) of `strings`, the form `Strings` reads."""
    encoded = [s.encode("utf-8") for s in strings]
    ends = np.cumsum([len(e) for e in encoded], dtype=np.int64)
    if ends.size and int(ends[-1]) >= 1 << 31:
        raise ValueError("the strings exceed 2 GiB")
    return ends.astype("<i4"), np.frombuffer(b"".join(encoded), dtype=np.uint8)


def index_arrays(chunks: Sequence[Chunk], lexical: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Every array of index.bin: the lexical statistics and the chunks' strings."""
    numbers: dict[str, int] = {}
    page_of = [numbers.setdefault(chunk.page, len(numbers)) for chunk in chunks]
    term_ends, term_blob = pack_strings(lexical["terms"])
    chunk_ends, chunk_blob = pack_strings([s for c in chunks for s in (c.id, c.heading, c.text)])
    page_ends, page_blob = pack_strings(list(numbers))
    link_ptr, link_ends, link_blob = link_arrays(chunks)
    strings = {
        "term_ends": term_ends,
        "term_blob": term_blob,
        "chunk_ends": chunk_ends,
        "chunk_blob": chunk_blob,
        "chunk_tokens": np.asarray([c.tokens for c in chunks]),
        "chunk_page": np.asarray(page_of),
        "page_ends": page_ends,
        "page_blob": page_blob,
    }
    out = {key: np.asarray(lexical[key]) for key in LEXICAL_DTYPES}
    out["postings_ptr"] = postings_pointers(out["document_frequency"])
    out["idf"] = idf_weights(out["document_frequency"], len(chunks))
    out.update(strings)
    out.update(link_ptr=link_ptr, link_ends=link_ends, link_blob=link_blob)
    return {
        key: np.ascontiguousarray(out[key], dtype=dtype)
        for key, dtype in {**INDEX_DTYPES, **LINK_DTYPES}.items()
    }


def link_arrays(chunks: Sequence[Chunk]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(CSR pointers by chunk, string ends, string blob) of the chunks' links."""
    counts = [len(c.links) for c in chunks]
    ptr = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype("<i4")
    ends, blob = pack_strings([s for c in chunks for link in c.links for s in link])
    return ptr, ends, blob


_ALIGN = 8  # every array starts on an 8-byte boundary of the file


def pack_index(arrays: Mapping[str, np.ndarray]) -> tuple[bytes, dict[str, list[int]]]:
    """index.bin's bytes, and each array's [offset, count] in them."""
    parts: list[bytes] = []
    layout: dict[str, list[int]] = {}
    offset = 0
    optional = {k: v for k, v in LINK_DTYPES.items() if k in arrays}
    for key, dtype in {**INDEX_DTYPES, **optional}.items():
        raw = np.ascontiguousarray(arrays[key], dtype=dtype).tobytes()
        layout[key] = [offset, len(raw) // dtype.itemsize]
        padding = -len(raw) % _ALIGN
        parts += [raw, b"\0" * padding]
        offset += len(raw) + padding
    return b"".join(parts), layout


def unpack_index(raw: bytes | np.ndarray, layout: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Zero-copy views of index.bin's arrays (read-only), checked against its size."""
    arrays: dict[str, np.ndarray] = {}
    optional = {k: v for k, v in LINK_DTYPES.items() if k in layout}
    try:
        for key, dtype in {**INDEX_DTYPES, **optional}.items():
            offset, count = (int(v) for v in layout[key])
            if offset < 0 or count < 0 or offset + count * dtype.itemsize > len(raw):
                raise ValueError(f"{key} lies outside the file")
            arrays[key] = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    except (KeyError, ValueError, TypeError) as exc:
        raise KnowledgeError(f"{INDEX_FILE} is unreadable: {exc}") from exc
    return arrays


def seal(metadata: Mapping[str, Any]) -> bytes:
    """The bytes of knowledge.json: compact JSON whose LAST key is its own CRC-32 (eight
    hex digits; see `checksum` for why not a cryptographic hash).

    The checksum covers the exact bytes before it, so verifying costs one pass over the
    file instead of a re-serialisation of everything.
    """
    body = {k: v for k, v in metadata.items() if k != "checksum"}
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    digest = f"{checksum(raw):08x}".encode("ascii")
    return raw[:-1] + _SEAL_HEAD + digest + _SEAL_TAIL


def sealed(raw: bytes) -> bool:
    """True when `raw` ends with the checksum `seal` wrote and the bytes still match it."""
    size = len(_SEAL_HEAD) + _SEAL_DIGITS + len(_SEAL_TAIL)
    if (
        len(raw) <= size
        or not raw.endswith(_SEAL_TAIL)
        or raw[-size:][: len(_SEAL_HEAD)] != _SEAL_HEAD
    ):
        return False
    digest = f"{checksum(raw[:-size] + b'}'):08x}".encode("ascii")
    return digest == raw[-_SEAL_DIGITS - len(_SEAL_TAIL) : -len(_SEAL_TAIL)]


def checksum(data: bytes | memoryview | mmap.mmap) -> int:
    """CRC-32 of a binary file of the artifact.

    It detects a corrupt or mismatched package (a truncated copy, a flipped bit, a file
    from another build swapped in), not an adversary: whoever can change the package can
    rewrite knowledge.json's checksums too, and the deployment pipeline guards the
    package itself. For that job CRC-32 is enough, and it costs about a third of a
    SHA-256 of the same bytes on every cold start (docs/benchmarks.md, "Cold load").
    """
    return zlib.crc32(data)


def build_knowledge(
    chunks: Sequence[Chunk], matrix: np.ndarray, embedder: str, lexical: Mapping[str, Any]
) -> Knowledge:
    """Assemble the in-memory index from chunks (used by tests and the benchmark), with
    the checks a hand-made index needs."""
    n = len(chunks)
    numbers: dict[str, int] = {}
    page_of = np.fromiter((numbers.setdefault(c.page, len(numbers)) for c in chunks), np.int64, n)
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
    arrays["postings_ptr"] = postings_pointers(df)
    arrays["idf"] = idf_weights(df, n)
    vocabulary = dict(zip(term_list, range(len(term_list)), strict=True))
    pages = PageIndex(list(numbers), page_of)
    link_ptr, link_ends, link_blob = link_arrays(chunks)
    arrays.update(link_ptr=link_ptr, link_ends=link_ends, link_blob=link_blob)
    return _assemble(tuple(chunks), matrix, embedder, arrays, vocabulary, page_of, pages)


def _assemble(
    chunks: Sequence[Chunk],
    matrix: np.ndarray,
    embedder: str,
    arrays: Mapping[str, np.ndarray],
    vocabulary: Mapping[str, int],
    page_of: np.ndarray,
    pages: Mapping[str, tuple[int, ...]],
) -> Knowledge:
    if matrix.ndim != 2 or matrix.shape[0] != len(chunks):
        raise KnowledgeError(f"matrix shape {matrix.shape} does not match {len(chunks)} chunks")
    return Knowledge(
        chunks=chunks,
        matrix=matrix if matrix.dtype == np.float32 else np.asarray(matrix, np.float32),
        embedder=embedder,
        dimensions=int(matrix.shape[1]),
        vocabulary=vocabulary,
        idf=arrays["idf"],
        postings_ptr=arrays["postings_ptr"],
        postings=arrays["postings"],
        text_tf=arrays["text_tf"],
        heading_tf=arrays["heading_tf"],
        text_length=arrays["text_length"],
        heading_length=arrays["heading_length"],
        page_of=page_of,
        pages=pages,
        page_head=np.unique(page_of, return_index=True)[1] if page_of.size else page_of,
        **_links(arrays),
    )


def _links(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The Knowledge fields of the chunks' links, when the index has them."""
    if "link_ptr" not in arrays:
        return {}
    return {
        "link_ptr": arrays["link_ptr"],
        "link_strings": Strings(arrays["link_blob"], arrays["link_ends"]),
    }


@cache
def load_knowledge(directory: Path, *, embedder: str | None = None) -> Knowledge:
    """Load and verify the artifact once per (directory, embedder) per process.

    Failures are not cached (functools.cache does not store exceptions), so a container
    that hit a bad artifact retries on the next request instead of serving stale state.
    """
    return _load(Path(directory), embedder)


def _load(directory: Path, embedder: str | None) -> Knowledge:
    """_load_described, with every refusal as one line that names the index directory and
    the command that rebuilds it (a missing artifact already says which command builds
    it; a header of this schema that lacks a field or holds the wrong type, sealed again
    after a hand edit, is refused like a corrupt file, not with a traceback)."""
    try:
        return _load_described(directory, embedder)
    except KnowledgeError as exc:
        if "`chatguard index" in str(exc):
            raise
        raise incompatible(directory, f"is unusable ({exc})", embedder) from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"{METADATA_FILE} does not describe a usable artifact ({type(exc).__name__}: {exc})"
        raise incompatible(directory, f"is unusable ({why})", embedder) from exc


def _load_described(directory: Path, embedder: str | None) -> Knowledge:
    metadata = _read_metadata(directory)
    described, matrix_file = _matrix_for(directory, metadata, embedder)
    matrix = _read_matrix(directory, matrix_file, described, int(metadata["chunks"]))
    spec = metadata["index"]
    arrays = unpack_index(_map_verified(directory / INDEX_FILE, spec.get("crc32")), spec["layout"])
    # Sizes only, from the layout (no pass over any array): the CRC already vouches for
    # the bytes, these catch a header that describes another file.
    count = {key: int(array.shape[0]) for key, array in arrays.items()}
    n = int(metadata["chunks"])
    terms_n = count["term_ends"]
    if (
        count["postings_ptr"] != terms_n + 1
        or count["idf"] != terms_n
        or any(count[k] != count["postings"] for k in ("text_tf", "heading_tf"))
        or any(count[k] != n for k in ("text_length", "heading_length", "chunk_tokens"))
        or count["chunk_page"] != n
        or count["chunk_ends"] != _FIELDS_PER_CHUNK * n
        or (terms_n and int(arrays["postings_ptr"][-1]) != count["postings"])
        or any(
            count[f"{kind}_ends"] and int(arrays[f"{kind}_ends"][-1]) != count[f"{kind}_blob"]
            for kind in ("term", "chunk", "page", "link")
            if f"{kind}_ends" in count
        )
        or ("link_ptr" in count and not _links_fit(arrays, n))
    ):
        raise KnowledgeError("lexical statistics do not match the chunks")
    page_names = Strings(arrays["page_blob"], arrays["page_ends"])
    page_of = arrays["chunk_page"]
    chunks = ChunkTable(
        Strings(arrays["chunk_blob"], arrays["chunk_ends"]),
        arrays["chunk_tokens"],
        page_of,
        page_names,
    )
    vocabulary = Vocabulary(Strings(arrays["term_blob"], arrays["term_ends"]))
    pages = PageIndex(page_names, page_of)
    embedder_id = described["embedder"]["id"]
    return _assemble(chunks, matrix, embedder_id, arrays, vocabulary, page_of, pages)


def carried_embedders(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids of the embedders whose vectors the artifact carries: its own, then the
    degraded answer's when it has one."""
    degraded = metadata.get("degraded")
    extra = (str(degraded["embedder"]["id"]),) if isinstance(degraded, dict) else ()
    return (str(metadata["embedder"]["id"]), *extra)


def _matrix_for(
    directory: Path, metadata: Mapping[str, Any], embedder: str | None
) -> tuple[Mapping[str, Any], str]:
    """The header part describing the matrix embedded by `embedder` (its own by default,
    else the degraded answer's) and that matrix's file; refused when it carries neither."""
    if embedder is None or metadata["embedder"]["id"] == embedder:
        return metadata, MATRIX_FILE
    degraded = metadata.get("degraded")
    if isinstance(degraded, dict) and degraded["embedder"]["id"] == embedder:
        return degraded, DEGRADED_MATRIX_FILE
    carried = " or ".join(repr(e) for e in carried_embedders(metadata))
    own = str(metadata["embedder"]["id"])
    # Beside a Titan index the rebuild is Titan's: it writes the local vectors S7 wants too.
    rebuild_for = own if own.startswith("bedrock:") else embedder
    raise incompatible(
        directory,
        f"was built with embedder {carried}, but this runtime embeds queries with {embedder!r}",
        rebuild_for,
    )


def _links_fit(arrays: Mapping[str, np.ndarray], n: int) -> bool:
    """The links' pointers cover the chunks and their strings, in order."""
    ptr = arrays["link_ptr"]
    if "link_ends" not in arrays or ptr.shape[0] != n + 1 or int(ptr[0]) != 0:
        return False
    return int(ptr[-1]) * _FIELDS_PER_LINK == arrays["link_ends"].shape[0] and bool(
        np.all(ptr[1:] >= ptr[:-1])
    )


def incompatible(directory: Path, why: str, embedder: str | None = None) -> KnowledgeError:
    """One line for an index this runtime cannot use: where it is, why, how to rebuild it.

    Said when the step loads the index (S4 before any embedding, S7 before answering) and
    by `chatguard serve` at start, so an operator reads it before a visitor sees a 503.
    """
    return KnowledgeError(
        f"the knowledge index in {directory} {why}: rebuild it with "
        f"`chatguard index SITE_DIR --out {directory}{_embedder_option(embedder)}`"
    )


def _embedder_option(embedder: str | None) -> str:
    """The `chatguard index` option that builds for this query embedder (the local model
    is the default, so it needs none)."""
    if embedder and embedder.startswith("bedrock:"):
        return " --embedder titan"
    if embedder and embedder.startswith("hashing"):
        return " --embedder hashing"
    return ""


def _read_metadata(directory: Path) -> dict[str, Any]:
    path = directory / METADATA_FILE
    try:
        raw = _read_small(path)
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
    if metadata["index"].get("terms_version") != TERMS_VERSION:
        raise incompatible(
            directory,
            f"was tokenised with terms version {metadata['index'].get('terms_version')!r}, "
            f"this runtime uses {TERMS_VERSION}",
        )
    return metadata


def _read_small(path: Path) -> bytes:
    """A small file's bytes through the os module: a cold start pays for every layer."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while part := os.read(fd, 1 << 16):
            parts.append(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def _map_verified(path: Path, crc32: object) -> np.ndarray:
    """The file's bytes as a read-only uint8 array over a memory map (no copy: the page
    cache holds the bytes), after its CRC-32 matches the one knowledge.json pins."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)  # the map keeps its own reference to the file
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise KnowledgeError(f"{path.name} is unreadable: {exc}") from exc
    if checksum(mapped) != crc32:
        raise KnowledgeError(f"{path.name} checksum mismatch: corrupted or from another build")
    return np.frombuffer(mapped, dtype=np.uint8)


_MATRIX_DTYPES: dict[object, np.dtype[Any]] = {
    "float16": np.dtype("<f2"),
    "float32": np.dtype("<f4"),
}


def _read_matrix(
    directory: Path, file: str, described: Mapping[str, Any], chunks: int
) -> np.ndarray:
    """The matrix as float32: a view of the file when stored so, else widened once.

    The .npy header is not parsed: knowledge.json says where the data starts, its type
    and its shape, and the CRC vouches for the bytes; only the size is checked.
    `described` is the header's part for this matrix: its embedder and its "matrix".
    """
    spec = described["matrix"]
    raw = _map_verified(directory / file, spec["crc32"])
    expected = (chunks, int(described["embedder"]["dimensions"]))
    dtype = _MATRIX_DTYPES.get(spec.get("dtype"))
    offset = int(spec.get("offset", -1))
    if dtype is None or offset < 0:
        raise incompatible(directory, f"holds a {spec.get('dtype')!r} matrix")
    values = (raw.shape[0] - offset) // dtype.itemsize
    if values != expected[0] * expected[1] or offset + values * dtype.itemsize != raw.shape[0]:
        raise incompatible(
            directory, f"holds a {dtype.name} matrix of {values} values, not {expected}"
        )
    matrix = np.frombuffer(raw, dtype=dtype, count=values, offset=offset).reshape(expected)
    # Ranking runs in float32: numpy has no fast float16 matrix product.
    return widen(matrix) if dtype == np.float16 else matrix


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
