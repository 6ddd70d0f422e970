"""The model bench's own checks: its adoption rule can refuse, a candidate's index ranks
with the local model's hybrid (as a swap would ship), and its cold probe reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.build import build
from steps.lib.grounding import retrieval
from steps.lib.grounding.knowledge import chunk_document, load_knowledge
from steps.lib.providers.local_embedder import DIMENSIONS, is_local_model
from tests.bench import embedding_models as em
from tests.bench.visitor_conditions import POLICY

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("mrr", "quoted", "linked")


def found(figures: dict[str, dict[str, float]], load_cpu: float = 0.3) -> dict[str, Any]:
    return {
        "figures": {1.0: figures},
        "bundle_mb": 100.0,
        "load_cpu": load_cpu,
        "first_ms": 10.0,
    }


def sets(value: float) -> dict[str, dict[str, float]]:
    return {key: dict.fromkeys(FIGURES, value) for key in em.SETS}


def test_a_candidate_equal_everywhere_that_lifts_npm_qualifies():
    base = found(sets(0.5))
    better = sets(0.5)
    better["npm"]["linked"] = 0.6
    assert em.verdict(base, found(better)) == "qualifies"


@given(
    st.sampled_from(list(em.SETS)),
    st.sampled_from(FIGURES),
    st.floats(0.01, 0.5),
)
def test_worse_on_any_set_or_figure_is_refused_whatever_it_lifts(key, figure, drop):
    base = found(sets(0.5))
    other = sets(0.5)
    other["npm"]["linked"] = other["lmdb"]["quoted"] = 0.9  # lifts both weak sets...
    other[key][figure] = 0.5 - drop  # ...but loses somewhere (perhaps one of those)
    rule = em.verdict(base, found(other))
    assert rule.startswith("not adopted") and f"{key} {figure}" in rule


def test_no_lift_on_lmdb_or_npm_and_a_slow_cold_load_are_refused():
    assert "lifts neither" in em.verdict(found(sets(0.5)), found(sets(0.5)))
    better = sets(0.5)
    better["lmdb"]["quoted"] = 0.7
    slow = em.verdict(found(sets(0.5)), found(better, load_cpu=0.3 + em.INIT_GROWTH_S + 0.01))
    assert "cold load" in slow and slow.startswith("not adopted")


class Fake:
    """A deterministic stand-in model: each text's vector from its hash (no real model)."""

    def _rows(self, texts: Sequence[str], salt: str) -> np.ndarray:
        rows = [
            np.random.default_rng(list(f"{salt}|{t}".encode())).normal(size=DIMENSIONS)
            for t in texts
        ]
        out = np.asarray(rows, dtype=np.float32).reshape(-1, DIMENSIONS)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(texts, "p")

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(texts, "q")


def test_a_candidates_index_ranks_with_the_local_hybrid_and_uses_its_passage_side(tmp_path):
    model = Fake()
    indexer = em.AsIndexer(model)
    build(ROOT / "examples" / "site", tmp_path / "k", POLICY, indexer)
    kb = load_knowledge(tmp_path / "k")
    assert is_local_model(kb.embedder)
    assert indexer.count == len(kb.chunks) > 0
    # The stored rows are the passage side, not the query side.
    first = chunk_document(kb.chunks[0])
    assert np.allclose(kb.matrix[0], model.passages([first])[0], atol=1e-2)
    assert not np.allclose(kb.matrix[0], model.queries([first])[0], atol=1e-2)
    # S4 scores beside it with the local model's hybrid: the page parts count.
    vector = model.queries(["how do I configure it"])[0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(retrieval, "LOCAL_PAGE_MAX_WEIGHT", 0.0)
        patch.setattr(retrieval, "LOCAL_HEAD_WEIGHT", 0.0)
        without_parts = retrieval.scores(kb, vector, "how do I configure it")
    assert not np.allclose(without_parts, retrieval.scores(kb, vector, "how do I configure it"))


@pytest.mark.slow
def test_the_cold_probe_loads_the_default_model_in_a_fresh_process_and_reports():
    load_cpu, load_wall, warm_ms, first_ms = em.cold_costs(em.CANDIDATES[0], ["a question"], 1)
    assert load_cpu > 0 and load_wall > 0 and warm_ms > 0 and first_ms > 0
