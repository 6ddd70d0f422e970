"""The local embedder: a real semantic model, pinned by checksum, chosen by the settings.

The meaning tests run the bundled model itself (one load per session, ~2 s); the
checksum tests never get that far: a mismatching file is refused before onnxruntime
reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from steps.lib.providers import models
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import (
    DIMENSIONS,
    MODEL_ID,
    TOKENIZER_FILE,
    EmbeddingModelError,
    LocalEmbedder,
    LocalQueryEmbedder,
    shared,
    weights_file,
)
from steps.lib.runtime.settings import Settings

# A question and two passages: the right one shares no word with it, the wrong one shares
# the words and word pieces ("park", "car") that a hashing embedder matches on.
QUESTION = "Where can I park my car?"
RIGHT = "Vehicles go in the garage behind the building; the spaces are free for visitors."
WRONG = "Carpet care in the park: we clean rugs every Tuesday."


def closer_to_right(embed: np.ndarray) -> bool:
    question, right, wrong = embed
    return float(question @ right) > float(question @ wrong)


def test_the_local_model_matches_by_meaning_where_the_hashing_stand_in_matches_letters() -> None:
    texts = [QUESTION, RIGHT, WRONG]
    assert closer_to_right(shared().embed(texts))
    # The same harness on the stand-in that was the offline default: it picks the wrong one.
    assert not closer_to_right(HashingEmbedder().embed(texts))


def test_vectors_are_unit_rows_of_384_and_the_query_costs_no_token() -> None:
    matrix = shared().embed(["one", "a longer second text about budgets", ""])
    assert matrix.shape == (3, DIMENSIONS) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    vector, billed = LocalQueryEmbedder(shared()).embed_query("a longer second text about budgets")
    assert billed == 0 and np.allclose(vector, matrix[1], atol=1e-5)


def test_batching_and_sorting_by_length_do_not_change_a_vector() -> None:
    texts = [f"section {n} " + "word " * (n * 5) for n in range(34)]
    together = shared().embed(texts)
    alone = np.stack([shared().embed([t])[0] for t in texts[::13]])
    assert np.allclose(together[::13], alone, atol=1e-4)


def test_a_weights_file_with_another_checksum_is_refused_in_one_line(tmp_path: Path) -> None:
    corrupted = tmp_path / "model.onnx"
    shutil.copyfile(weights_file(), corrupted)
    with corrupted.open("r+b") as handle:  # one flipped byte deep inside the weights
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingModelError) as refused:
        LocalEmbedder(weights=corrupted)
    message = str(refused.value)
    assert "model.onnx does not match its pinned sha256" in message and "\n" not in message


def test_a_tokenizer_with_another_checksum_is_refused(tmp_path: Path) -> None:
    edited = tmp_path / "tokenizer.json"
    edited.write_text(TOKENIZER_FILE.read_text(encoding="utf-8").replace("[UNK]", "[UNKNOWN]"))
    with pytest.raises(EmbeddingModelError, match=r"tokenizer\.json does not match"):
        LocalEmbedder(tokenizer=edited)


def test_a_missing_weights_file_is_one_line_too(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match=r"cannot read model\.onnx"):
        LocalEmbedder(weights=tmp_path / "model.onnx")


@pytest.mark.parametrize(
    ("values", "kind", "embedder_id"),
    [
        ({"model_backend": "offline"}, "local", MODEL_ID),  # the offline default
        ({"model_backend": "offline", "embedder": "titan"}, "local", MODEL_ID),
        ({"model_backend": "offline", "embedder": "hashing"}, "hashing", HashingEmbedder.id),
        ({"model_backend": "bedrock", "embedder": "local"}, "local", MODEL_ID),
        (
            {"model_backend": "bedrock", "embedder": "titan"},
            "titan",
            "bedrock:amazon.titan-embed-text-v2:0:1024",
        ),
    ],
)
def test_the_settings_choose_the_embedder(
    values: dict[str, str], kind: str, embedder_id: str
) -> None:
    s = Settings().replace(**values)
    assert models.embedder_kind(s) == kind
    assert models.query_embedder_id(s) == embedder_id


def test_the_offline_backend_embeds_queries_with_the_local_model() -> None:
    embedder = models.query_embedder(Settings().replace(model_backend="offline"))
    assert embedder.id == MODEL_ID
    vector, billed = embedder.embed_query(QUESTION)
    assert vector.shape == (DIMENSIONS,) and billed == 0


def test_the_degraded_answer_ranks_by_meaning_with_the_local_model(tmp_path: Path) -> None:
    """S7 at zero model cost: the local cosine moves the answer to the page that means the
    question; the lexical match alone (what S7 did before, and does with Titan) picks the
    page that repeats its words."""
    from indexer.build import build
    from indexer.local_model import CachedLocalEmbedder
    from indexer.policy import IndexPolicy
    from steps.lib.grounding import retrieval
    from steps.lib.grounding.knowledge import load_knowledge

    site = tmp_path / "site"
    site.mkdir()
    (site / "rugs.md").write_text(
        "# Rugs\n\nCarpet care in the park: we clean rugs in the park every Tuesday, "
        "next to the park gate.\n"
    )
    (site / "garage.md").write_text(
        "# Getting here\n\nVehicles go in the garage behind the building; visitors may "
        "park there for free.\n"
    )
    (site / "about.md").write_text("# About\n\nWe are a small team writing about networks.\n")
    build(site, tmp_path / "k", IndexPolicy((), ()), CachedLocalEmbedder(shared))
    kb = load_knowledge(tmp_path / "k", embedder=MODEL_ID)
    vector = shared().embed([QUESTION])[0]
    lexical, local = (
        retrieval.degraded_answer(kb, QUESTION, query_vector=v) for v in (None, vector)
    )
    assert lexical is not None and lexical.page == "/rugs.html"  # permalinks: file (default)
    assert local is not None and local.page == "/garage.html"
    # Still no answer for a message with nothing to look for.
    assert retrieval.degraded_answer(kb, "is it?", query_vector=vector) is None


def test_an_index_of_the_local_model_ranks_with_its_own_lexical_weight(tmp_path: Path) -> None:
    """The weights re-chosen beside the local model (lexical, page head, page best) apply
    to its index only; Titan's and the stand-in's keep theirs (the same vectors,
    relabelled, rank with cosine + 0.3 x lexical and no page parts)."""
    from indexer.artifact import write_artifact
    from indexer.build import plan
    from indexer.policy import IndexPolicy
    from steps.lib.grounding import retrieval
    from steps.lib.grounding.knowledge import load_knowledge

    site = tmp_path / "site"
    site.mkdir()
    for name in ("limits", "budgets", "widget"):
        (site / f"{name}.md").write_text(f"# {name}\n\nThe {name} page talks about {name}.\n")
    chunks = [chunk for _, chunk in plan(site, IndexPolicy((), ()))[0]]
    matrix = np.random.default_rng(3).normal(size=(len(chunks), DIMENSIONS))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vector = matrix[0].astype(np.float32)
    for embedder, weight, head, best in ((MODEL_ID, 0.2, 0.1, 0.5), ("hashing-v2", 0.3, 0, 0)):
        write_artifact(tmp_path / embedder, chunks, matrix, embedder)
        kb = load_knowledge(tmp_path / embedder)
        cosine = retrieval.cosines(kb.matrix, vector)
        expected = (
            cosine
            + np.float32(weight) * retrieval.lexical_scores(kb, "budgets")
            + retrieval.page_parts(kb, cosine, head, best)
        )
        assert np.allclose(retrieval.scores(kb, vector, "budgets"), expected)
