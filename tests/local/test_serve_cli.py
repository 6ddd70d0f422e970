"""`chatguard serve` as a terminal sees it: a taken port is refused before anything heavy
starts, one line per message by default (the steps' JSON behind --json-logs), Ctrl-C is
exit 130, and the contract's OpenAPI document is served where the README points."""

from __future__ import annotations

import json
import signal
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from chatguard.cli import main
from local.commands import chat_demo_serve as commands
from local.commands.render import message_lines, quiet_logs
from local.engine.runtime import LocalRuntime
from local.server.routes import Dispatcher, EdgeOptions, Request, message_line

from .conftest import serve_process

ROOT = Path(__file__).resolve().parents[2]
CHAT = {"message": "How does the WAF rate-based rule protect the chat?"}


def test_a_taken_port_is_refused_before_the_runtime_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_run(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the runtime started before the port was checked")

    monkeypatch.setattr(commands, "open_runtime", must_not_run)
    monkeypatch.setattr(commands, "settings_for", must_not_run)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err
    assert len(err.strip().splitlines()) == 1, err


def _post(path: str, payload: dict[str, Any]) -> Request:
    body = json.dumps(payload).encode()
    return Request("POST", path, {"content-type": "application/json"}, body, ("127.0.0.1", 5))


def test_serve_prints_one_line_per_message(
    runtime: LocalRuntime, capsys: pytest.CaptureFixture[str]
) -> None:
    dispatcher = Dispatcher(runtime, EdgeOptions())
    capsys.readouterr()
    with quiet_logs(show_libraries=False, show_steps=False), message_lines(enabled=True):
        answered = dispatcher(_post("/chat", CHAT))
        refused = dispatcher(_post("/_origin/chat", CHAT))
    lines = capsys.readouterr().err.strip().splitlines()
    assert answered.status == 200 and refused.status == 403
    assert len(lines) == 2, lines
    assert " /chat 200 answered " in lines[0] and " ms, " in lines[0]
    assert " /_origin/chat 403 " in lines[1]
    assert "127.0.0.1" not in "".join(lines) and "rate-based" not in "".join(lines)


def test_message_lines_name_the_outcome_never_the_visitor() -> None:
    assert message_line("/chat", 200, {"reply": "x", "limited": True}, 3.4) == (
        "/chat 200 limited 3 ms"
    )
    assert message_line("/chat", 200, {"degraded": True, "off": True, "sources": [{}]}, 9) == (
        "/chat 200 off 9 ms, 1 source"
    )
    assert message_line("/chat", 503, {"error": "unavailable"}, 1) == "/chat 503 unavailable 1 ms"


def test_json_logs_and_quiet_are_flags_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--json-logs" in out and "--quiet" in out
    with pytest.raises(SystemExit) as done:
        main(["serve", "--quiet", "--json-logs"])
    assert done.value.code == 2


def test_the_openapi_document_is_served_where_the_readme_points(runtime: LocalRuntime) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "`/openapi.json`" in readme
    answer = Dispatcher(runtime, EdgeOptions())(
        Request("GET", "/openapi.json", {}, b"", ("127.0.0.1", 5))
    )
    served = json.loads(answer.body)
    on_disk = json.loads((ROOT / "steps" / "lib" / "request" / "openapi.json").read_text())
    assert answer.status == 200 and answer.content_type == "application/json"
    assert served == on_disk


@pytest.mark.slow
def test_ctrl_c_on_a_running_serve_exits_130(knowledge_dir: Path) -> None:
    with serve_process("--quiet", "--knowledge", str(knowledge_dir)) as (process, url):
        with urllib.request.urlopen(url + "/openapi.json", timeout=60) as response:
            assert response.status == 200  # serving: the signal lands in the loop
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
