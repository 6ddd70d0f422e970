"""What `chatguard chat` prints when the edge refuses (issue 27, item 8): the refusal and
what to do, never an empty step table; a size block states the limits it passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatguard.cli import main


def test_an_empty_message_is_its_400_without_an_empty_step_table(
    knowledge_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "", "--knowledge", str(knowledge_dir)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("HTTP 400\n") and "must not be empty" in out
    assert "no step ran: the edge answered before the workflow" in out
    assert "state" not in out and "total" not in out


def test_a_message_over_the_body_limit_states_both_limits(
    knowledge_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "x" * 100_000, "--knowledge", str(knowledge_dir)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("HTTP 403\n")
    flat = " ".join(out.split())  # the reply is wrapped at 88 columns
    assert "this request is 100,0" in flat and "at most 16,384 bytes" in flat
    assert "a message at most 2,000 characters" in flat
