"""An index this runtime cannot use is named, with its rebuild command, in one line at
start, before any visitor sees a 503."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.build import build
from indexer.policy import IndexPolicy
from local.commands.chat_demo_serve import local_settings
from local.commands.preflight import knowledge_problem
from steps.lib.grounding.knowledge import SCHEMA_VERSION, load_knowledge, seal
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import MAX_TOKENS, embedder_id
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID

SITE = Path(__file__).resolve().parents[2] / "examples" / "site"


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "knowledge"
    build(SITE, out, IndexPolicy.from_context(), HashingEmbedder())
    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(out))
    # These tests are about the messages: the fast stand-in, asked for by name.
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "hashing")
    load_knowledge.cache_clear()
    return out


def test_a_hashing_index_under_the_offline_default_names_the_local_rebuild(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline default is the local model now: an index from the stand-in (or any
    other embedder) is named in one line with the command that rebuilds it."""
    monkeypatch.delenv("CHATGUARD_EMBEDDER")
    problem = knowledge_problem(local_settings())
    assert problem is not None and "\n" not in problem
    assert "embedder 'hashing-v2'" in problem and f"'{LOCAL_MODEL_ID}'" in problem
    assert problem.endswith(f"chatguard index examples/site --out {index}")


def rewrite(index: Path, **changes: object) -> None:
    metadata = json.loads((index / "knowledge.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key == "terms_version":
            metadata["index"]["terms_version"] = value
        elif key == "embedder":
            metadata["embedder"]["id"] = value
        else:
            metadata[key] = value
    (index / "knowledge.json").write_bytes(seal(metadata))
    load_knowledge.cache_clear()


def test_a_current_index_has_no_problem(index: Path) -> None:
    assert knowledge_problem(local_settings()) is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"schema": SCHEMA_VERSION - 1}, f"has schema {SCHEMA_VERSION - 1}"),
        ({"terms_version": 1}, "terms version 1"),
        ({"embedder": "hashing-v1"}, "embedder 'hashing-v1'"),
    ],
)
def test_serve_refuses_an_incompatible_index_in_one_line(
    index: Path, change: dict[str, object], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite(index, **change)
    assert main(["serve", "--port", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err
    assert f"no usable index at {index} " in err and f"--out {index}" in err
    assert "chatguard index" in err


def test_a_bedrock_runtime_is_told_to_rebuild_with_titan(index: Path) -> None:
    from steps.lib.runtime.errors import KnowledgeError

    with pytest.raises(KnowledgeError, match=r"--out .* --embedder titan`$"):
        load_knowledge(index, embedder="bedrock:amazon.titan-embed-text-v2:0:1024")


def test_an_index_of_the_local_model_cut_elsewhere_names_the_local_rebuild(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors cut at another length (an index from before the cut moved) are not mixed
    with today's queries: the same one line, with the command that rebuilds it."""
    monkeypatch.delenv("CHATGUARD_EMBEDDER")
    rewrite(index, embedder=embedder_id(MAX_TOKENS * 2))
    problem = knowledge_problem(local_settings())
    assert problem is not None and "\n" not in problem
    assert f"embedder '{embedder_id(MAX_TOKENS * 2)}'" in problem
    assert problem.endswith(f"chatguard index examples/site --out {index}")


def test_a_titan_index_without_the_degraded_answers_vectors_is_named_before_serving(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --model bedrock` with an index built before the local vectors were written
    beside Titan's: the degraded answer would fail closed, so it is said at start, with
    Titan's rebuild (which writes them). The same index with them has no problem."""
    titan = "bedrock:amazon.titan-embed-text-v2:0:1024"
    rewrite(index, embedder=titan)
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "titan")
    problem = knowledge_problem(local_settings(model_backend="bedrock"))
    assert problem is not None and "\n" not in problem
    assert f"'{LOCAL_MODEL_ID}'" in problem
    assert problem.endswith(f"chatguard index examples/site --out {index} --embedder titan")
    # With S7 told to rank by words alone, the same index serves.
    monkeypatch.setenv("CHATGUARD_DEGRADED_EMBEDDER", "none")
    assert knowledge_problem(local_settings(model_backend="bedrock")) is None
