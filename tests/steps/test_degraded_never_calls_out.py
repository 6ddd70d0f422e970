"""S7 makes no AWS call and opens no connection, for every settings combination and every
index it may be given: it answers (200) or fails closed (KnowledgeError, one line).

Every pairing the settings allow (backend x embedder x degraded_embedder) meets every kind
of index the indexer writes (Titan's with and without the local vectors beside, the
local model's, the hashing stand-in's). Every AWS client factory S7 could reach and every
outgoing socket raise here, so a path that would call Bedrock (or anything) fails the test.
"""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from steps import degraded
from steps.lib.grounding import knowledge
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.providers import models
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import shared
from steps.lib.runtime import clients
from steps.lib.runtime.errors import KnowledgeError

from .conftest import load_event

SITE = {
    "refunds.md": "# Refunds\n\nA damaged parcel is refunded within five working days.\n",
    "payment.md": "# Payment\n\nWe charge the card when the item ships.\n",
}
BACKENDS = ("bedrock", "offline")
EMBEDDERS = ("titan", "local", "hashing")
DEGRADED = ("local", "none")
INDEXES = ("titan+local", "titan", "local", "hashing")


class TitanStandIn(HashingEmbedder):
    """Offline stand-in for Titan's vectors, under Titan's id (no Bedrock here)."""

    id = bedrock_embedder_id("amazon.titan-embed-text-v2:0", 1024)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    site = tmp_path_factory.mktemp("site")
    for name, text in SITE.items():
        (site / name).write_text(text, encoding="utf-8")
    root = tmp_path_factory.mktemp("indexes")
    local = CachedLocalEmbedder(shared, cache_path=root / "cache.json")
    pairs = {
        "titan+local": (TitanStandIn(1024), local),
        "titan": (TitanStandIn(1024), None),
        "local": (local, None),
        "hashing": (HashingEmbedder(64), None),
    }
    for name, (embedder, beside) in pairs.items():
        build(site, root / name, IndexPolicy((), ()), embedder, beside)
    return {name: root / name for name in pairs}


@pytest.fixture(autouse=True)
def nothing_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object, **__: object) -> None:
        raise AssertionError("S7 reached for the network")

    for factory in clients._FACTORIES:
        monkeypatch.setattr(clients, factory.__name__, refused)
    for seam in ("query_embedder", "responder"):
        monkeypatch.setattr(models, seam, refused)
    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)


@pytest.mark.parametrize(
    ("backend", "embedder", "ranking", "index"),
    list(itertools.product(BACKENDS, EMBEDDERS, DEGRADED, INDEXES)),
)
def test_the_degraded_answer_answers_or_fails_closed_and_never_calls_out(
    monkeypatch: pytest.MonkeyPatch,
    indexes: dict[str, Path],
    backend: str,
    embedder: str,
    ranking: str,
    index: str,
) -> None:
    _deploy(monkeypatch, backend, embedder, ranking, indexes[index])
    try:
        out = degraded.handler(_event(), None)
    except KnowledgeError as exc:  # the ASL's Catch answers 503: no model call
        assert "\n" not in str(exc) and "`chatguard index" in str(exc)
        return
    assert out["statusCode"] == 200 and out["body"]["degraded"] is True
    assert out["body"]["sources"][0]["page"] == "/refunds.html"


def test_the_guard_catches_a_degraded_answer_that_embeds_with_the_billed_seam(
    monkeypatch: pytest.MonkeyPatch, indexes: dict[str, Path]
) -> None:
    # The naive twin: S7 embedding its query through models.query_embedder (S4's seam,
    # Titan in a deployment) instead of the local model directly.
    _deploy(monkeypatch, "bedrock", "titan", "local", indexes["titan+local"])
    naive = lambda query: models.query_embedder(degraded.settings())  # noqa: E731
    monkeypatch.setattr(degraded, "_local_vector", naive)
    with pytest.raises(AssertionError, match="network"):
        degraded.handler(_event(), None)


def _deploy(
    monkeypatch: pytest.MonkeyPatch, backend: str, embedder: str, ranking: str, index: Path
) -> None:
    monkeypatch.setenv("CHATGUARD_MODEL_BACKEND", backend)
    monkeypatch.setenv("CHATGUARD_EMBEDDER", embedder)
    monkeypatch.setenv("CHATGUARD_DEGRADED_EMBEDDER", ranking)
    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(index))
    knowledge.load_knowledge.cache_clear()


def _event() -> dict:
    event = load_event("degraded")
    event["request"].update(message="Is a damaged parcel refunded?", history=[], page=None)
    return event
