"""`chatguard chat --server URL`: one message to a `chatguard serve` already running, only
when asked (local/commands/remote_chat.py), saying which server answered; anything that shapes an
in-process run, or a server that does not answer, is one line and exit code 2."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from chatguard.cli import main
from local.engine.runtime import LocalRuntime
from local.server.uvicorn_server import ChatServer

QUESTION = "How do I pick a WAF rate limit?"


def test_the_running_server_answers_and_says_so(
    runtime: LocalRuntime,
    serve: Callable[..., ChatServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = serve()
    # This process already runs a LocalRuntime, so an in-process chat could not start: the
    # answer can only have come from the server, whose workflow counts the invocations.
    assert main(["chat", QUESTION, "--server", server.url]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("HTTP 200\n")
    assert f"answered by the chatguard serve at {server.url}" in printed
    # Six Tasks, and the wake of S4-S6: the runtime's first message finds S1 new, the site
    # quiet (steps/lib/runtime/quiet.py).
    assert runtime.wire.counts()["lambda", "Invoke"] == 6 + 3


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--history", "turns.json"], "--history"),
        (["--knowledge", "build/knowledge"], "--knowledge"),
        (["--model", "bedrock"], "--model"),
        (["--ip", "192.0.2.7"], "--ip"),
        (["--verbose"], "--verbose"),
    ],
)
def test_what_shapes_an_in_process_run_is_refused_with_server(
    extra: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", QUESTION, "--server", "http://127.0.0.1:8787", *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert named in err and "--server" in err


def test_a_server_url_must_be_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", QUESTION, "--server", "localhost:8787"]) == 2
    assert "e.g. http://127.0.0.1:8787" in capsys.readouterr().err


def test_no_server_answering_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens once it is closed
    assert main(["chat", QUESTION, "--server", f"http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no chatguard serve answers" in err and "leave out --server" in err


def test_server_takes_one_message_not_a_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "--server", "http://127.0.0.1:8787"]) == 2
    assert "--server sends one message" in capsys.readouterr().err
