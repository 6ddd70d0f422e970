"""Indexing with the local model: a rebuild after an edit embeds only the changed chunks,
the model loads only when something needs embedding, and a bad model file stops the
build in one line with nothing written."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexer import cli
from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import load_knowledge
from steps.lib.providers import local_embedder
from steps.lib.providers.local_embedder import DIMENSIONS, MODEL_ID

PAGES = {
    "a.md": "# Alpha\n\nThe alpha page talks about rate limits and windows.\n",
    "b.md": "# Beta\n\nThe beta page talks about budgets and daily ceilings.\n",
    "c.md": "# Gamma\n\nThe gamma page talks about the widget and its styles.\n",
}


class CountingModel:
    """Stands in for LocalEmbedder: a vector from the text's hash; counts what it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.loads = 0

    def __call__(self) -> CountingModel:
        self.loads += 1
        return self

    def embed(self, texts: Sequence[str], progress: Callable[[int], Any] | None = None) -> Any:
        self.texts += texts
        if progress is not None:
            progress(len(texts))
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=DIMENSIONS) for t in texts]
        matrix = np.asarray(rows, dtype=np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def write(site: Path, pages: dict[str, str]) -> None:
    site.mkdir(exist_ok=True)
    for name, text in pages.items():
        (site / name).write_text(text, encoding="utf-8")


def test_a_rebuild_after_an_edit_embeds_only_the_changed_chunk(tmp_path: Path) -> None:
    site, cache = tmp_path / "site", tmp_path / "cache.json"
    write(site, PAGES)
    model = CountingModel()
    first = CachedLocalEmbedder(model, cache_path=cache)  # type: ignore[arg-type]
    build(site, tmp_path / "k", IndexPolicy((), ()), first)
    assert first.embedded == 3 and len(model.texts) == 3

    write(site, {"b.md": PAGES["b.md"].replace("daily", "monthly")})
    model.texts.clear()
    second = CachedLocalEmbedder(model, cache_path=cache)  # type: ignore[arg-type]
    build(site, tmp_path / "k", IndexPolicy((), ()), second)
    assert second.embedded == 1 and len(model.texts) == 1 and "monthly" in model.texts[0]
    kb = load_knowledge(tmp_path / "k", embedder=MODEL_ID)
    assert kb.matrix.shape == (3, DIMENSIONS)

    model.texts.clear()
    loads = model.loads
    third = CachedLocalEmbedder(model, cache_path=cache)  # type: ignore[arg-type]
    build(site, tmp_path / "k", IndexPolicy((), ()), third)
    assert third.embedded == 0 and model.loads == loads  # all cached: the model never loads


def test_the_cache_is_keyed_by_the_embedder_too(tmp_path: Path) -> None:
    model = CountingModel()
    one = CachedLocalEmbedder(model, cache_path=tmp_path / "c.json")  # type: ignore[arg-type]
    one.embed(["same text"])
    other = CachedLocalEmbedder(model, cache_path=tmp_path / "c.json")  # type: ignore[arg-type]
    other.id = "another-model-version"
    other.embed(["same text"])
    assert other.embedded == 1


def test_the_progress_bar_counts_the_chunks_it_embeds(tmp_path: Path) -> None:
    stream = io.StringIO()
    embedder = CachedLocalEmbedder(CountingModel(), progress=stream)  # type: ignore[arg-type]
    embedder.embed(["one", "two", "three"])
    assert "3/3" in stream.getvalue() and stream.getvalue().endswith("\n")


def test_a_corrupted_model_stops_the_build_in_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    write(site, PAGES)
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not the model")
    monkeypatch.setattr(local_embedder, "weights_file", lambda: bad)
    assert cli.main([str(site), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "model.onnx does not match its pinned sha256" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
