"""`chatguard chat` keeps a conversation: without a message it reads questions one a line
and each follow-up reaches the model with the answers signed so far (one runtime, the same
secrets); `--history FILE` carries the signed turns between runs for scripts; a bad file
is one line, exit 2, and left as it was."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatguard.cli import main
from local.commands import conversation
from steps.lib.providers import models

FIRST = "How do I pick a WAF rate limit?"
FOLLOW_UP = "And which window should it use?"


class Recorder:
    """Wraps the offline responder and records the messages each model call received."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, s: Any) -> Any:
        recorder, real = self, self.inner(s)

        class Recording:
            def count_tokens(self, *args: Any) -> int:
                return int(real.count_tokens(*args))

            def converse(self, **kwargs: Any) -> Any:
                recorder.calls.append(list(kwargs["messages"]))
                return real.converse(**kwargs)

        return Recording()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    seen = Recorder(models.responder)
    monkeypatch.setattr(models, "responder", seen)
    return seen


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CHATGUARD_CACHE_DIR", str(where))
    return where


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [" ".join(block.get("text", "") for block in m["content"]) for m in messages]


def test_a_session_sends_each_follow_up_with_the_signed_answers_so_far(
    knowledge_dir: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{FIRST}\n\n{FOLLOW_UP}\n"))
    assert main(["chat", "--knowledge", str(knowledge_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count("HTTP 200") == 2
    assert len(recorder.calls) == 2
    first, follow_up = recorder.calls
    assert len(first) == 1 and len(follow_up) == 3  # the earlier exchange, then the question
    assert FIRST in _texts(follow_up)[0] and FOLLOW_UP in _texts(follow_up)[2]
    answer = " ".join(_texts(follow_up)[1].split())
    assert answer and answer in " ".join(out.split())  # the answer it was given


def test_history_file_carries_the_conversation_between_runs(
    knowledge_dir: Path, recorder: Recorder, private_cache: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    history = tmp_path / "conversation.json"
    assert main(["chat", FIRST, "--history", str(history), "--knowledge", str(knowledge_dir)]) == 0
    saved = json.loads(history.read_text())
    assert [t["role"] for t in saved] == ["user", "assistant"] and saved[1]["sig"]
    argv = ["chat", FOLLOW_UP, "--history", str(history), "--knowledge", str(knowledge_dir)]
    assert main(argv) == 0  # a new runtime: the signature must still verify
    assert len(recorder.calls[1]) == 3, "the signed turns of the first run were dropped"
    assert len(json.loads(history.read_text())) == 4
    assert (private_cache / conversation.KEY_FILE).stat().st_mode & 0o077 == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON"),
        ('{"role": "user"}', "must hold a JSON list"),
        ('[{"role": "system", "content": "x"}]', "role of 'user' or 'assistant'"),
        ('[{"role": "user", "content": ""}]', "non-empty content"),
        ('[{"role": "user", "content": "x", "extra": 1}]', "unknown field"),
    ],
)
def test_a_bad_history_file_is_one_line_and_left_alone(
    knowledge_dir: Path, private_cache: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], content: str, says: str,
) -> None:  # fmt: skip
    bad = tmp_path / "history.json"
    bad.write_text(content)
    assert main(["chat", "hi", "--history", str(bad), "--knowledge", str(knowledge_dir)]) == 2
    err = capsys.readouterr().err
    assert says in err and str(bad) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert bad.read_text() == content


_turn = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": st.text(min_size=1)},
    optional={"sig": st.text()},
)


@settings(deadline=None)
@given(st.lists(_turn, max_size=20), st.integers(min_value=0, max_value=8))
def test_only_signed_exchanges_are_sent_within_the_limit(turns: list[Any], limit: int) -> None:
    sent = conversation.to_send(turns, limit)
    assert len(sent) <= limit and len(sent) % 2 == 0
    for user, answer in zip(sent[::2], sent[1::2], strict=True):
        assert user["role"] == "user" and answer["role"] == "assistant" and answer["sig"]
