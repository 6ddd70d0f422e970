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

from steps.lib.providers import local_embedder, models
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import (
    DIMENSIONS,
    MAX_TOKENS,
    MODEL_ID,
    TOKENIZER_FILE,
    EmbeddingModelError,
    LocalEmbedder,
    LocalQueryEmbedder,
    embedder_id,
    is_local_model,
    shared,
    token_batches,
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


def varied_texts() -> list[str]:
    """Texts of every length up to past the cut, in an order that sorting must undo."""
    rng = np.random.default_rng(7)
    words = "budget window ceiling visitor page quota answer model rate limit".split()  # noqa: SIM905
    return [f"section {n}: " + " ".join(rng.choice(words, size=n * 7)) for n in range(40)][::-1]


def test_batched_sorted_and_pooled_vectors_equal_one_by_one_in_the_original_order() -> None:
    texts = varied_texts()
    pooled = LocalEmbedder(threads=2).embed(texts)
    alone = np.stack([shared().embed([t])[0] for t in texts])
    assert np.allclose(pooled, alone, atol=1e-4)  # padding is masked out of the pooling
    # Row i is text i's vector: no other text's one-by-one vector is as close.
    assert np.array_equal(np.argmax(pooled @ alone.T, axis=1), np.arange(len(texts)))


def test_progress_counts_every_text_once_batch_by_batch() -> None:
    seen: list[int] = []
    LocalEmbedder(threads=2).embed(varied_texts(), progress=seen.append)
    assert len(seen) > 1 and seen == sorted(seen) and seen[-1] == len(varied_texts())


def test_batches_are_sorted_by_length_and_hold_what_fits_the_budget_once_padded() -> None:
    lengths = [5, 300, 2, 40, 40, 7, 128, 3]
    batches = token_batches(lengths, budget=100)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)
    # Padded to its longest, each batch fits the budget unless it holds one text only.
    assert all(len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100 for b in batches)
    assert batches == [[2, 7, 0, 5], [3, 4], [6], [1]]


def test_the_id_changes_with_where_a_text_is_cut() -> None:
    assert embedder_id(MAX_TOKENS) == MODEL_ID
    assert embedder_id(128) != embedder_id(256)
    assert LocalEmbedder(max_tokens=256).id == embedder_id(256) != MODEL_ID
    # ...yet an index at any cut is this model's, so the bench ranks it with its weights.
    assert is_local_model(embedder_id(256)) and is_local_model(MODEL_ID)
    assert not is_local_model("hashing-v2") and not is_local_model("minilm-l12-max128")


def test_a_cut_changes_the_vector_of_a_text_longer_than_it_only() -> None:
    short, long = "rate limits", "rate limits " + "and budget windows " * 60
    cut, full = LocalEmbedder(max_tokens=16), LocalEmbedder(max_tokens=256)
    assert np.allclose(cut.embed([short]), full.embed([short]), atol=1e-5)
    assert not np.allclose(cut.embed([long]), full.embed([long]), atol=1e-2)


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
    for embedder, weight, head, best in ((MODEL_ID, 0.3, 0.1, 0.5), ("hashing-v2", 0.3, 0, 0)):
        write_artifact(tmp_path / embedder, chunks, matrix, embedder)
        kb = load_knowledge(tmp_path / embedder)
        cosine = retrieval.cosines(kb.matrix, vector)
        expected = (
            cosine
            + np.float32(weight) * retrieval.lexical_scores(kb, "budgets")
            + retrieval.page_parts(kb, cosine, head, best)
        )
        assert np.allclose(retrieval.scores(kb, vector, "budgets"), expected)


# What a Lambda environment (or a visitor's laptop) carries into the interpreter. An
# allow-list, not a deny-list: onnxruntime switches its telemetry off by itself when any CI
# system's variable is set (CI, GITHUB_ACTIONS, GITLAB_CI, JENKINS_URL, CODEBUILD_BUILD_ID,
# ... read from its library), so inheriting the runner's environment would hide the very
# default these tests are about (the CI run of 2026-12-03 saw no device id for that reason).
_CARRIED = ("PATH", "LANG", "LC_ALL", "TZ", "LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_RESET")


def _embed_in_a_fresh_home(tmp_path: Path, script: str) -> list[str]:
    """Run ``script`` in a new interpreter whose home is empty and whose environment carries
    only ``_CARRIED``: nothing of onnxruntime's telemetry, no CI variable, no cache home;
    what it left in that home."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k in _CARRIED} | {"HOME": str(home)}
    root = Path(local_embedder.__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return sorted(str(p.relative_to(home)) for p in home.rglob("*"))


def test_the_embedder_leaves_no_telemetry_in_the_home(tmp_path: Path) -> None:
    script = (
        "from steps.lib.providers.local_embedder import LocalEmbedder\n"
        "print(LocalEmbedder().embed(['hello']).shape)\n"
    )
    assert _embed_in_a_fresh_home(tmp_path, script) == []


def test_naive_onnxruntime_as_it_starts_writes_a_device_id(tmp_path: Path) -> None:
    # The same model through onnxruntime with its defaults: a telemetry device id appears.
    script = (
        "import onnxruntime\n"
        "from steps.lib.providers.local_embedder import weights_file\n"
        "onnxruntime.InferenceSession(str(weights_file()), providers=['CPUExecutionProvider'])\n"
    )
    left = _embed_in_a_fresh_home(tmp_path, script)
    assert any("onnxruntime" in name for name in left), left
