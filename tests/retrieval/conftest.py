from __future__ import annotations

import json
from dataclasses import replace
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
PRETTY_POLICY = replace(IndexPolicy.from_context(), permalinks="pretty")


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Knowledge:
    """The sample site, built fresh (does not depend on `make index` having run), with
    pretty links: its pages are then named as the questions file names them (ranking
    reads a page's identity, never the form of its link)."""
    out = tmp_path_factory.mktemp("knowledge")
    build(SAMPLE_SITE, out, PRETTY_POLICY, HashingEmbedder())
    return load_knowledge(out, embedder=HashingEmbedder.id)


@pytest.fixture(scope="session")
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session")
def questions() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    return data
