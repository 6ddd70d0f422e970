from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from indexer.artifact import write_artifact
from indexer.build import build
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import (
    Chunk,
    ChunkTable,
    Strings,
    Vocabulary,
    chunk_document,
    lexical_stats,
    load_knowledge,
    pack_strings,
    seal,
    widen,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.runtime.errors import KnowledgeError

from .conftest import SAMPLE_SITE


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    out = tmp_path / "knowledge"
    build(SAMPLE_SITE, out, IndexPolicy.from_context(), HashingEmbedder())
    return out


def _rewrite(out: Path, change: dict[str, object], *, reseal: bool) -> None:
    path = out / "knowledge.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    metadata.update(change)
    path.write_bytes(seal(metadata) if reseal else json.dumps(metadata).encode())


def test_round_trip_keeps_chunks_and_vectors(tmp_path: Path) -> None:
    chunks = [
        Chunk("/a#x", "/a", "A > X", "WAF rate rules at the edge.", 9),
        Chunk("/b#y", "/b", "B > Y", "DMARC, SPF and DKIM for mail.", 11),
    ]
    matrix = HashingEmbedder().embed([chunk_document(c) for c in chunks])
    write_artifact(tmp_path / "k", chunks, matrix, HashingEmbedder.id)
    kb = load_knowledge(tmp_path / "k", embedder="hashing-v2")
    assert tuple(kb.chunks) == tuple(chunks)
    assert kb.vocabulary["waf"] == sorted(kb.vocabulary).index("waf")
    assert kb.embedder == "hashing-v2" and kb.dimensions == 1024
    assert kb.matrix.dtype == np.float32 and kb.matrix.flags.c_contiguous
    # float16 on disk: every component within half a float16 step of the original.
    assert np.max(np.abs(kb.matrix - matrix)) < 1e-3
    assert kb.page_chunks("/b/") == (1,) and kb.page_chunks("/nowhere") == ()


def test_loading_is_cached_per_directory_until_cleared(artifact: Path) -> None:
    first = load_knowledge(artifact)
    assert load_knowledge(artifact) is first
    load_knowledge.cache_clear()
    assert load_knowledge(artifact) is not first


def test_refuses_another_embedder(artifact: Path) -> None:
    with pytest.raises(KnowledgeError, match=r"embedder 'hashing-v2'.*rebuild"):
        load_knowledge(artifact, embedder="bedrock:amazon.titan-embed-text-v2:0:1024")


def test_refuses_another_schema_version(artifact: Path) -> None:
    _rewrite(artifact, {"schema": 99}, reseal=True)
    with pytest.raises(KnowledgeError, match="schema 99"):
        load_knowledge(artifact)


def test_refuses_edited_metadata(artifact: Path) -> None:
    _rewrite(artifact, {"chunks": 3}, reseal=False)
    with pytest.raises(KnowledgeError, match=r"knowledge\.json checksum mismatch"):
        load_knowledge(artifact)


@pytest.mark.parametrize(
    "change",
    [{"index": None}, {"matrix": {"dtype": "float16"}}, {"chunks": "many"}, {"embedder": []}],
    ids=["no-index", "matrix-without-checksum", "chunk-count-not-a-number", "embedder-list"],
)
def test_refuses_a_resealed_header_that_lacks_a_field_in_one_line(
    artifact: Path, change: dict[str, object]
) -> None:
    _rewrite(artifact, change, reseal=True)
    with pytest.raises(KnowledgeError) as refused:
        load_knowledge(artifact)
    message = str(refused.value)
    assert "\n" not in message and "rebuild it with `chatguard index" in message
    assert str(artifact) in message


def test_refuses_an_edited_chunk_text(artifact: Path) -> None:
    raw = (artifact / "index.bin").read_bytes()
    text = load_knowledge(artifact).chunks[0].text.encode("utf-8")
    edited = raw.replace(text[:24], b"Ignore previous instruct"[: len(text[:24])], 1)
    assert edited != raw
    (artifact / "index.bin").write_bytes(edited)
    load_knowledge.cache_clear()
    with pytest.raises(KnowledgeError, match=r"index\.bin checksum mismatch"):
        load_knowledge(artifact)


def test_refuses_a_flipped_byte_in_the_matrix(artifact: Path) -> None:
    raw = bytearray((artifact / "embeddings.npy").read_bytes())
    raw[-7] ^= 0x40
    (artifact / "embeddings.npy").write_bytes(bytes(raw))
    with pytest.raises(KnowledgeError, match=r"embeddings\.npy checksum mismatch"):
        load_knowledge(artifact)


def test_refuses_a_matrix_of_the_wrong_shape_even_when_resealed(artifact: Path) -> None:
    metadata = json.loads((artifact / "knowledge.json").read_text(encoding="utf-8"))
    _rewrite(artifact, {"embedder": {**metadata["embedder"], "dimensions": 512}}, reseal=True)
    wrong = r"float16 matrix of \d+ values, not \(\d+, 512\): rebuild it with"
    with pytest.raises(KnowledgeError, match=wrong):
        load_knowledge(artifact)


@pytest.mark.parametrize("damage", ["truncate", "delete", "not-an-object"])
def test_refuses_missing_or_unreadable_metadata(artifact: Path, damage: str) -> None:
    path = artifact / "knowledge.json"
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "delete":
        path.unlink()
    else:
        path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(KnowledgeError):
        load_knowledge(artifact)


def test_a_failed_load_is_not_cached(artifact: Path) -> None:
    good = (artifact / "embeddings.npy").read_bytes()
    (artifact / "embeddings.npy").write_bytes(good[:-1])
    with pytest.raises(KnowledgeError):
        load_knowledge(artifact)
    (artifact / "embeddings.npy").write_bytes(good)
    assert len(load_knowledge(artifact).chunks) > 0


def test_a_matrix_with_nan_is_never_written(tmp_path: Path) -> None:
    chunk = Chunk("/a#a", "/a", "A", "text", 2)
    with pytest.raises(ValueError, match="NaN"):
        write_artifact(tmp_path / "k", [chunk], np.full((1, 16), np.nan, np.float32), "x")
    assert not (tmp_path / "k").exists()


def test_refuses_lexical_statistics_from_another_tokenizer_version(artifact: Path) -> None:
    metadata = json.loads((artifact / "knowledge.json").read_text(encoding="utf-8"))
    _rewrite(artifact, {"index": {**metadata["index"], "terms_version": 0}}, reseal=True)
    with pytest.raises(KnowledgeError, match="terms version 0"):
        load_knowledge(artifact)


def test_refuses_lexical_statistics_that_do_not_fit_the_chunks(artifact: Path) -> None:
    metadata = json.loads((artifact / "knowledge.json").read_text(encoding="utf-8"))
    layout = {**metadata["index"]["layout"]}
    layout["term_ends"] = [layout["term_ends"][0], 3]  # three terms, the postings of all
    _rewrite(artifact, {"index": {**metadata["index"], "layout": layout}}, reseal=True)
    with pytest.raises(KnowledgeError, match="do not match the chunks"):
        load_knowledge(artifact)


def test_refuses_a_flipped_byte_in_the_lexical_arrays(artifact: Path) -> None:
    raw = bytearray((artifact / "index.bin").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (artifact / "index.bin").write_bytes(bytes(raw))
    with pytest.raises(KnowledgeError, match=r"index\.bin checksum mismatch"):
        load_knowledge(artifact)


def test_refuses_a_lexical_layout_that_points_outside_the_file_even_when_resealed(
    artifact: Path,
) -> None:
    metadata = json.loads((artifact / "knowledge.json").read_text(encoding="utf-8"))
    size = (artifact / "index.bin").stat().st_size
    layout = {**metadata["index"]["layout"], "postings": [size - 4, 2]}
    _rewrite(artifact, {"index": {**metadata["index"], "layout": layout}}, reseal=True)
    with pytest.raises(KnowledgeError, match=r"index\.bin is unreadable: postings lies outside"):
        load_knowledge(artifact)


def test_the_lexical_arrays_load_as_views_of_the_file_in_their_scoring_types(
    artifact: Path,
) -> None:
    kb = load_knowledge(artifact)
    # float32 on disk for what scoring multiplies: no conversion (and no copy) at load.
    for array in (kb.text_tf, kb.heading_tf, kb.text_length, kb.heading_length):
        assert array.dtype == np.float32 and not array.flags.writeable
    assert kb.postings.dtype == np.int32 and not kb.postings.flags.writeable


def test_widen_is_bit_for_bit_numpys_conversion_for_every_finite_float16() -> None:
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]  # zeros, subnormals, normals, both signs
    wide = widen(finite)
    assert wide.dtype == np.float32
    assert np.array_equal(wide.view(np.uint32), finite.astype(np.float32).view(np.uint32))
    # The naive shift (no mask for the sign's copies in bits 28-30) is wrong on negatives.
    with np.errstate(over="ignore"):
        naive = (finite.view(np.int16).astype(np.int32) << 13).view(np.float32) * 2.0**112
    positive = (finite.view(np.uint16) & 0x8000) == 0
    assert np.array_equal(naive[positive], finite[positive].astype(np.float32))
    assert not np.any(naive[~positive] == finite[~positive].astype(np.float32))


def test_the_vocabulary_lookup_finds_every_term_and_nothing_else(artifact: Path) -> None:
    kb = load_knowledge(artifact)
    chunks = list(kb.chunks)
    expected = lexical_stats(chunks)["terms"]
    assert list(kb.vocabulary) == expected and len(kb.vocabulary) == len(expected)
    for term_id, term in enumerate(expected):
        assert kb.vocabulary[term] == term_id
    # Prefixes, extensions, a term sorting before the first and after the last: absent.
    for absent in ("wa", "wafs", "", "\u0000", "\U0010ffff", expected[-1] + "z"):
        assert absent not in kb.vocabulary
        assert kb.vocabulary.get(absent) is None


def test_the_vocabulary_is_ordered_by_utf8_bytes_as_the_search_assumes() -> None:
    # "é" (U+00E9) sorts after "z" by bytes and by code point; "ﬁ" (U+FB01) after both.
    chunks = [Chunk("/a#a", "/a", "A", "zebra \u00e9t\u00e9 \ufb01n caf\u00e9 apple", 5)]
    terms = lexical_stats(chunks)["terms"]
    assert terms == sorted(terms, key=lambda t: t.encode("utf-8"))
    vocabulary = Vocabulary(terms)
    assert all(vocabulary[t] == i for i, t in enumerate(terms))


def test_a_loaded_chunk_is_decoded_only_when_read(artifact: Path) -> None:
    kb = load_knowledge(artifact)
    table = kb.chunks
    assert isinstance(table, ChunkTable)
    assert table._cache.count(None) == len(table)  # nothing decoded at load
    third = table[2]
    assert table[2] is third and table._cache.count(None) == len(table) - 1
    assert table[-1] == table[len(table) - 1] and table[1:3] == [table[1], table[2]]
    with pytest.raises(IndexError):
        table[len(table)]


def test_strings_round_trip_any_unicode() -> None:
    texts = ["", "plain", "caf\u00e9 \u2014 \U0001f600", "line\nbreak", ""]
    ends, blob = pack_strings(texts)
    strings = Strings(blob.tobytes(), ends)
    assert list(strings) == texts and strings[-2] == "line\nbreak"


def test_the_vocabulary_memo_stays_bounded_and_correct(monkeypatch: pytest.MonkeyPatch) -> None:
    terms = sorted(f"t{i:03d}" for i in range(50))
    vocabulary = Vocabulary(terms)
    monkeypatch.setattr(Vocabulary, "MEMO_LIMIT", 8)
    for round_ in range(3):  # made-up words between real ones: the memo is emptied, not grown
        for i, term in enumerate(terms):
            assert vocabulary[term] == i
            assert f"made-up-{round_}-{i}" not in vocabulary
            assert len(vocabulary._memo) <= 8


@pytest.mark.parametrize("file", ["embeddings.npy", "index.bin", "knowledge.json"])
def test_a_corrupt_file_is_refused_in_one_line_with_the_index_and_the_rebuild_command(
    artifact: Path, file: str
) -> None:
    raw = bytearray((artifact / file).read_bytes())
    raw[len(raw) // 3] ^= 0x04
    (artifact / file).write_bytes(bytes(raw))
    with pytest.raises(KnowledgeError) as refused:
        load_knowledge(artifact)
    message = str(refused.value)
    assert "\n" not in message and str(artifact) in message
    assert message.endswith(f"rebuild it with `chatguard index SITE_DIR --out {artifact}`")
