from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from botocore.exceptions import ClientError

from indexer.titan import EmbeddingFailed, TitanEmbedder


class FakeBedrock:
    """Stands in for bedrock-runtime: deterministic vectors, counted calls, scripted errors."""

    def __init__(
        self, errors: list[str] | None = None, delay: float = 0.0, overlap: int = 0
    ) -> None:
        self.calls: list[str] = []
        self.errors = list(errors or [])
        self.delay = delay
        # The first `overlap` calls wait for one another (up to a minute, then go on), so
        # calls that can run together are seen together however the threads are scheduled.
        self._meet = threading.Barrier(overlap) if overlap > 1 else None
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        body = json.loads(kwargs["body"])
        assert kwargs["modelId"] == "amazon.titan-embed-text-v2:0"
        assert body["dimensions"] == 1024 and body["normalize"] is True
        with self._lock:
            self.calls.append(body["inputText"])
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            error = self.errors.pop(0) if self.errors else None
            meet = self._meet if self._meet and len(self.calls) <= self._meet.parties else None
        try:
            if meet is not None:
                with contextlib.suppress(threading.BrokenBarrierError):
                    meet.wait(timeout=60)
            time.sleep(self.delay)
            if error:
                raise ClientError({"Error": {"Code": error, "Message": "no"}}, "InvokeModel")
            seed = sum(body["inputText"].encode()) % 2**32
            vector = np.random.default_rng(seed).normal(size=1024) * 3  # not unit length
            payload = {"embedding": vector.tolist(), "inputTextTokenCount": 7}
            return {"body": io.BytesIO(json.dumps(payload).encode())}
        finally:
            with self._lock:
                self.in_flight -= 1


def embedder(client: FakeBedrock, tmp_path: Path, **kwargs: Any) -> TitanEmbedder:
    sleeps: list[float] = []
    made = TitanEmbedder(client, cache_path=tmp_path / "cache.json", progress=io.StringIO(),
                         sleep=sleeps.append, **kwargs)  # fmt: skip
    made.sleeps = sleeps  # type: ignore[attr-defined]
    return made


def test_throttling_backs_off_and_retries_then_succeeds(tmp_path: Path) -> None:
    client = FakeBedrock(errors=["ThrottlingException"])
    titan = embedder(client, tmp_path, concurrency=1)
    matrix = titan.embed(["alpha", "beta", "gamma"])
    assert len(client.calls) == 4  # three texts + one throttled attempt
    assert len(titan.sleeps) == 1 and 0.25 <= titan.sleeps[0] <= 0.5  # type: ignore[attr-defined]
    assert matrix.shape == (3, 1024) and matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    assert titan.input_tokens == 21


def test_a_rebuild_embeds_only_changed_chunks(tmp_path: Path) -> None:
    first = FakeBedrock()
    before = embedder(first, tmp_path).embed(["one", "two", "three"])
    second = FakeBedrock()
    after = embedder(second, tmp_path).embed(["one", "two (edited)", "three"])
    assert second.calls == ["two (edited)"]
    np.testing.assert_array_equal(before[[0, 2]], after[[0, 2]])


def test_identical_texts_are_embedded_once(tmp_path: Path) -> None:
    client = FakeBedrock()
    matrix = embedder(client, tmp_path).embed(["same", "same", "other"])
    assert sorted(client.calls) == ["other", "same"]
    np.testing.assert_array_equal(matrix[0], matrix[1])


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    # Two calls are made to meet (more than one in flight, on any machine); the delay gives
    # an unbounded pool the chance to show more than three.
    client = FakeBedrock(delay=0.01, overlap=2)
    embedder(client, tmp_path, concurrency=3).embed([f"text {i}" for i in range(24)])
    assert 1 < client.max_in_flight <= 3


def test_a_non_retryable_error_fails_but_keeps_what_was_paid_for(tmp_path: Path) -> None:
    client = FakeBedrock(errors=[None, "AccessDeniedException"])  # type: ignore[list-item]
    with pytest.raises(EmbeddingFailed, match="AccessDeniedException"):
        embedder(client, tmp_path, concurrency=1).embed(["a", "b", "c"])
    retry = FakeBedrock()
    embedder(retry, tmp_path, concurrency=1).embed(["a", "b", "c"])
    assert retry.calls == ["b", "c"]


def test_persistent_throttling_gives_up_after_max_attempts(tmp_path: Path) -> None:
    client = FakeBedrock(errors=["ThrottlingException"] * 10)
    titan = embedder(client, tmp_path, concurrency=1, max_attempts=3)
    with pytest.raises(EmbeddingFailed, match="ThrottlingException"):
        titan.embed(["a"])
    assert len(client.calls) == 3
    assert len(titan.sleeps) == 2  # type: ignore[attr-defined]


def test_progress_bar_reaches_the_total(tmp_path: Path) -> None:
    titan = embedder(FakeBedrock(), tmp_path)
    titan.embed(["a", "b"])
    assert isinstance(titan.progress, io.StringIO)
    assert titan.progress.getvalue().rstrip().endswith("] 2/2")


def test_the_id_names_model_and_dimensions() -> None:
    assert TitanEmbedder(FakeBedrock(), progress=None).id == (
        "bedrock:amazon.titan-embed-text-v2:0:1024"
    )
    with pytest.raises(ValueError):
        TitanEmbedder(FakeBedrock(), dimensions=300)


def test_chatguard_index_with_titan_builds_and_reuses_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    from indexer import cli
    from steps.lib.grounding.knowledge import load_knowledge

    from .conftest import SAMPLE_SITE

    clients: list[FakeBedrock] = []

    def fake_client(service: str, **kwargs: Any) -> FakeBedrock:
        assert service == "bedrock-runtime"
        assert kwargs["config"].retries == {"total_max_attempts": 1}
        clients.append(FakeBedrock())
        return clients[-1]

    monkeypatch.setattr(boto3, "client", fake_client)
    out = tmp_path / "knowledge"
    args = [str(SAMPLE_SITE), "--out", str(out), "--embedder", "titan", "--region", "eu-west-1"]
    assert cli.main(args) == 0
    kb = load_knowledge(out, embedder="bedrock:amazon.titan-embed-text-v2:0:1024")
    assert len(clients[0].calls) == len(kb.chunks)
    assert (tmp_path / ".embedding-cache" / "titan-1024.json").exists()
    assert "embedding [" in capsys.readouterr().err
    assert cli.main(args) == 0
    assert clients[1].calls == []  # nothing changed, nothing re-embedded
