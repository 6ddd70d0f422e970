"""The degraded step's zip carries the second matrix its header names, or synthesis stops.

Beside Titan, S7 ranks with the local model's vectors (knowledge.py's second matrix). The
stack's index check reads the header only, so a header naming a matrix whose file is gone
(an index directory copied by its three documented files) passed synthesis and shipped an
S7 that failed every degraded answer closed. A file the header does not name (another
build's, left or copied in) is never shipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.build import build
from indexer.policy import IndexPolicy
from infra import bundling
from steps.lib.grounding.knowledge import (
    ARTIFACT_FILES,
    DEGRADED_MATRIX_FILE,
    bedrock_embedder_id,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID

pytestmark = pytest.mark.infra

SAMPLE_SITE = Path(__file__).resolve().parents[2] / "examples" / "site"


class TitanStandIn(HashingEmbedder):
    """Offline stand-in for Titan's vectors, under Titan's id (no Bedrock here)."""

    id = bedrock_embedder_id("amazon.titan-embed-text-v2:0", 1024)


class LocalStandIn:
    """Offline stand-in for the local model's vectors, under its id (fast)."""

    id = LOCAL_MODEL_ID
    dimensions = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dimensions), np.float32)
        rows[np.arange(len(texts)), np.arange(len(texts)) % self.dimensions] = 1.0
        return rows


@pytest.fixture
def titan_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "knowledge"
    build(SAMPLE_SITE, out, IndexPolicy.from_context(), TitanStandIn(128), LocalStandIn())
    monkeypatch.setattr(bundling, "KNOWLEDGE_DIR", out)
    return out


def _shipped(asset: bundling.StepAsset) -> set[str]:
    return {path.name for path in bundling.shipped_knowledge(asset)}


def test_the_step_with_the_model_ships_the_second_matrix_and_retrieve_does_not(titan_index):
    assert _shipped(bundling.LOCAL_RETRIEVAL_ASSET) == {*ARTIFACT_FILES, DEGRADED_MATRIX_FILE}
    assert _shipped(bundling.RETRIEVAL_ASSET) == set(ARTIFACT_FILES)
    assert _shipped(bundling.GATE_ASSET) == set()


def test_a_named_second_matrix_that_is_missing_stops_synthesis(titan_index):
    (titan_index / DEGRADED_MATRIX_FILE).unlink()
    with pytest.raises(bundling.BundlingError, match=DEGRADED_MATRIX_FILE):
        bundling.LOCAL_RETRIEVAL_ASSET.source_hash()  # what synthesis asks first
    bundling.RETRIEVAL_ASSET.source_hash()  # Retrieve never reads it: unaffected


def test_a_second_matrix_the_header_does_not_name_is_not_shipped(tmp_path, monkeypatch):
    out = tmp_path / "knowledge"
    build(SAMPLE_SITE, out, IndexPolicy.from_context(), TitanStandIn(128), None)
    (out / DEGRADED_MATRIX_FILE).write_bytes(b"another build's matrix")
    monkeypatch.setattr(bundling, "KNOWLEDGE_DIR", out)
    assert _shipped(bundling.LOCAL_RETRIEVAL_ASSET) == set(ARTIFACT_FILES)
