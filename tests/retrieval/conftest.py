from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexer.build import build
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import Knowledge, load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SITE = ROOT / "examples" / "site"
QUESTIONS = ROOT / "tests" / "data" / "retrieval_questions.json"


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Knowledge:
    """The sample site, built fresh (does not depend on `make index` having run)."""
    out = tmp_path_factory.mktemp("knowledge")
    build(SAMPLE_SITE, out, IndexPolicy.from_context(), HashingEmbedder())
    return load_knowledge(out, embedder=HashingEmbedder.id)


@pytest.fixture(scope="session")
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session")
def questions() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    return data
