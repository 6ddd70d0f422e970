"""The degraded answer's own vectors: beside a billed embedder's matrix (Titan's), the
index carries the same chunks embedded by the local model, so S7 ranks by meaning without
a billed call (knowledge.py's second matrix, `chatguard index --degraded-vectors`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.build import build
from indexer.cli import add_arguments, make_degraded_embedder
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import (
    DEGRADED_MATRIX_FILE,
    bedrock_embedder_id,
    carried_embedders,
    load_knowledge,
    seal,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID
from steps.lib.runtime.errors import KnowledgeError

from .conftest import SAMPLE_SITE

TITAN_ID = bedrock_embedder_id("amazon.titan-embed-text-v2:0", 1024)


class TitanStandIn(HashingEmbedder):
    """Offline stand-in for Titan's vectors, under Titan's id (no Bedrock here)."""

    id = TITAN_ID


class FreeStandIn:
    """A second embedder of another size and id (the local model's place, fast)."""

    id = "free-stand-in"
    dimensions = 8

    def __init__(self, value: float = 1.0) -> None:
        self.value = value

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dimensions), np.float32)
        rows[np.arange(len(texts)), np.arange(len(texts)) % self.dimensions] = self.value
        return rows


@pytest.fixture
def titan_index(tmp_path: Path) -> Path:
    out = tmp_path / "knowledge"
    report = build(SAMPLE_SITE, out, IndexPolicy.from_context(), TitanStandIn(), FreeStandIn())
    assert report.degraded_embedder == FreeStandIn.id
    return out


def test_one_index_serves_retrieve_and_the_degraded_answer_each_with_its_vectors(
    titan_index: Path,
) -> None:
    for_retrieve = load_knowledge(titan_index, embedder=TITAN_ID)
    for_s7 = load_knowledge(titan_index, embedder=FreeStandIn.id)
    assert (for_retrieve.embedder, for_retrieve.dimensions) == (TITAN_ID, 1024)
    assert (for_s7.embedder, for_s7.dimensions) == (FreeStandIn.id, 8)
    assert tuple(for_s7.chunks) == tuple(for_retrieve.chunks)  # the same chunks, in order
    n = len(for_s7.chunks)
    assert np.array_equal(for_s7.matrix, FreeStandIn().embed(["x"] * n))
    metadata = json.loads((titan_index / "knowledge.json").read_text(encoding="utf-8"))
    assert carried_embedders(metadata) == (TITAN_ID, FreeStandIn.id)


def test_an_embedder_the_index_carries_no_vectors_for_is_refused_naming_both(
    titan_index: Path,
) -> None:
    with pytest.raises(KnowledgeError) as refused:
        load_knowledge(titan_index, embedder=LOCAL_MODEL_ID)
    message = str(refused.value)
    assert f"'{TITAN_ID}' or '{FreeStandIn.id}'" in message and "\n" not in message
    assert message.endswith("--embedder titan`")  # Titan's rebuild writes both


def test_a_flipped_byte_in_the_second_matrix_is_refused_and_retrieve_still_loads(
    titan_index: Path,
) -> None:
    path = titan_index / DEGRADED_MATRIX_FILE
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(KnowledgeError, match=r"embeddings-degraded\.npy checksum mismatch"):
        load_knowledge(titan_index, embedder=FreeStandIn.id)
    assert load_knowledge(titan_index, embedder=TITAN_ID).dimensions == 1024


def test_a_second_matrix_of_the_wrong_shape_is_refused_even_when_resealed(
    titan_index: Path,
) -> None:
    path = titan_index / "knowledge.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    metadata["degraded"]["embedder"]["dimensions"] = 16
    path.write_bytes(seal(metadata))
    with pytest.raises(KnowledgeError, match=r"matrix of \d+ values, not \(\d+, 16\)"):
        load_knowledge(titan_index, embedder=FreeStandIn.id)


def test_a_rebuild_without_them_leaves_no_second_matrix_behind(titan_index: Path) -> None:
    build(SAMPLE_SITE, titan_index, IndexPolicy.from_context(), TitanStandIn())
    assert not (titan_index / DEGRADED_MATRIX_FILE).exists()
    with pytest.raises(KnowledgeError, match="rebuild"):
        load_knowledge(titan_index, embedder=FreeStandIn.id)


def test_a_second_matrix_with_nan_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="NaN"):
        build(
            SAMPLE_SITE, tmp_path / "k", IndexPolicy.from_context(), TitanStandIn(),
            FreeStandIn(float("nan")),
        )  # fmt: skip
    assert not (tmp_path / "k").exists()


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["site", *argv])


@pytest.mark.parametrize(
    ("argv", "writes_local"),
    [
        (("--embedder", "titan"), True),  # the default beside a billed embedder
        (("--embedder", "titan", "--degraded-vectors", "none"), False),
        (("--embedder", "hashing"), False),
        (("--embedder", "hashing", "--degraded-vectors", "local"), True),
        ((), False),  # the local index: its own vectors serve S7
        (("--degraded-vectors", "local"), False),
    ],
)
def test_index_writes_the_local_vectors_beside_titan_by_default(
    argv: tuple[str, ...], writes_local: bool
) -> None:
    degraded = make_degraded_embedder(_args(*argv))
    assert (degraded is not None and degraded.id == LOCAL_MODEL_ID) is writes_local
