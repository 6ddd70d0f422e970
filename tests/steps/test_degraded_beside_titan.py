"""S7 in a Titan deployment: no billed call, yet it ranks by meaning with the local model's
vectors, which the indexer writes into the index beside Titan's (knowledge.py's second
matrix). The hashing stand-in, under Titan's embedder id, plays Titan's matrix here: S7
never reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from steps import degraded
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.providers import models
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import MODEL_ID, shared
from steps.lib.runtime.errors import KnowledgeError

from .conftest import load_event

# The question shares words ("item", "get") with the payment page only; it means the
# refunds page. Words alone quote payment; the local model's cosine quotes refunds.
SITE = {
    "refunds.md": (
        "# Refunds\n\nIf a parcel arrives damaged, we return what you paid within five "
        "working days.\n"
    ),
    "payment.md": (
        "# Payment\n\nWe take money by card. Money is charged when the item ships, and item "
        "prices include tax.\n"
    ),
}
QUESTION = "Can I get a refund when my item is broken?"


class TitanStandIn(HashingEmbedder):
    """Offline stand-in for Titan's vectors, under Titan's id (no Bedrock here)."""

    id = bedrock_embedder_id("amazon.titan-embed-text-v2:0", 1024)


def _site(root: Path) -> Path:
    for name, text in SITE.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def titan_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index as `chatguard index --embedder titan` writes it: the billed embedder's
    matrix and the local model's beside it."""
    site = _site(tmp_path_factory.mktemp("site"))
    out = tmp_path_factory.mktemp("titan") / "knowledge"
    local = CachedLocalEmbedder(shared, cache_path=out.parent / "cache.json")
    report = build(site, out, IndexPolicy((), ()), TitanStandIn(1024), local)
    assert report.degraded_embedder == MODEL_ID
    return out


@pytest.fixture(scope="module")
def words_only_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = _site(tmp_path_factory.mktemp("site"))
    out = tmp_path_factory.mktemp("words") / "knowledge"
    build(site, out, IndexPolicy((), ()), TitanStandIn(1024))
    return out


def _titan_deployment(monkeypatch: pytest.MonkeyPatch, index: Path, ranking: str) -> None:
    monkeypatch.setenv("CHATGUARD_MODEL_BACKEND", "bedrock")
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "titan")
    monkeypatch.setenv("CHATGUARD_DEGRADED_EMBEDDER", ranking)
    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(index))

    def billed(s: object) -> None:
        raise AssertionError("the degraded answer must not call Titan")

    monkeypatch.setattr(models, "query_embedder", billed)


def _ask(question: str) -> dict:
    event = load_event("degraded")
    event["request"].update(message=question, history=[], page=None)
    out = degraded.handler(event, None)
    assert out["statusCode"] == 200
    return out["body"]


def test_beside_titan_the_degraded_answer_ranks_with_the_local_models_vectors(
    monkeypatch: pytest.MonkeyPatch, titan_index: Path
) -> None:
    _titan_deployment(monkeypatch, titan_index, "local")
    body = _ask(QUESTION)
    assert body["degraded"] is True
    assert body["sources"][0]["page"] == "/refunds.html"
    assert "we return what you paid" in body["reply"]


def test_naive_words_alone_quote_the_page_that_merely_shares_them(
    monkeypatch: pytest.MonkeyPatch, titan_index: Path
) -> None:
    # The same index and question, S7 told to rank by words alone (as before).
    _titan_deployment(monkeypatch, titan_index, "none")
    assert _ask(QUESTION)["sources"][0]["page"] == "/payment.html"


def test_an_index_without_the_local_vectors_fails_closed_with_the_rebuild_command(
    monkeypatch: pytest.MonkeyPatch, words_only_index: Path
) -> None:
    # Synthesis refuses this pairing (infra/index_check.check_degraded); should it reach a
    # Lambda anyway, S7 raises and the workflow's FailClosed answers 503: no model call.
    _titan_deployment(monkeypatch, words_only_index, "local")
    with pytest.raises(KnowledgeError) as refused:
        _ask(QUESTION)
    message = str(refused.value)
    assert MODEL_ID in message and "\n" not in message
    assert message.endswith(f"--out {words_only_index} --embedder titan`")
