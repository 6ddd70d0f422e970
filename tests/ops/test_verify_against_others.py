"""`verify --local` against what is not a chatguard server (issue 27, item 9): one line
that says so, before the spend notice (nothing will be spent), instead of a table of
identical CANNOT TEST rows or FAIL rows that blame the defenses."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from chatguard.cli import main
from ops import verify
from ops.http import Reply


class StaticFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:  # quiet: the test reads stderr
        pass


@pytest.fixture
def another_server() -> Iterator[str]:
    """A static file server: POST /chat is a 501 page, as on any site that is not ours."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StaticFiles)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_is_not_chatguard_is_one_line_before_the_notice(
    another_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--local", another_server]) == verify.EXIT_INCOMPLETE
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "not as chatguard's /chat does" in err and "501 (not JSON)" in err


def test_a_dead_port_is_one_line_before_the_notice(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["verify", "--local", f"http://127.0.0.1:{port}"]) == verify.EXIT_INCOMPLETE
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "no answer from" in err and "chatguard serve" in err


def test_a_burst_never_blocked_is_not_reported_still_blocked() -> None:
    burst = verify.Check(verify.BURST, False, "60 requests, none blocked")

    def refuses(*_args: object, **_kwargs: object) -> Reply:
        return Reply(404, None, {})

    assert verify._released(burst, "http://127.0.0.1:1/_admin", refuses) == burst


def test_the_detail_keeps_the_whole_error() -> None:
    error = "x" * 200
    assert verify._describe(Reply(400, {"error": error}, {})).endswith(error)
