"""Errors that teach: every mistake a newcomer makes with `chatguard` is one line on stderr
and the right exit code, never a traceback, and nothing starts before the check."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.build import build
from indexer.policy import IndexPolicy
from local.commands import chat_demo_serve as commands
from local.engine.runtime import LocalRuntime
from local.server.routes import Dispatcher, EdgeOptions, Request
from steps.lib.providers.hashing_embedder import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--port", "99999"], "99999 is not a port"),
        (["serve", "--port", "http"], "not a port number"),
        (["serve", "--rate-limit", "0"], "above zero"),
        (["serve", "--visitor-message-limit", "-3"], "above zero"),
        (["chat", "--history"], "expected one argument"),
        (["nosuchcommand"], "invalid choice"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    err = _usage_error(capsys, *argv)
    assert says in err and "--help" in err and "Traceback" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("chatguard 0.")


def test_every_serve_flag_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = commands.argparse.ArgumentParser()
    commands.register(parser.add_subparsers())
    for action in parser._subparsers._group_actions[0].choices["serve"]._actions:  # type: ignore[union-attr]
        assert action.help, action.option_strings


@pytest.fixture
def own_site(tmp_path: Path) -> Path:
    site = tmp_path / "mysite"
    (site / "notes").mkdir(parents=True)
    (site / "index.md").write_text("# Harbour bakery\n\nWe bake sourdough every morning.\n")
    (site / "notes" / "hours.md").write_text(
        "# Opening hours\n\nThe harbour bakery opens at seven and closes at three.\n"
    )
    return site


@pytest.mark.parametrize("command", [["chat", "hello"], ["demo"], ["serve", "--port", "0"]])
def test_a_missing_index_stops_the_command_naming_the_path_and_the_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    started: list[LocalRuntime] = []
    monkeypatch.setattr(LocalRuntime, "start", lambda self: started.append(self) or self)
    missing = tmp_path / "no-index-here"
    code = main([*command, "--knowledge", str(missing)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert str(missing) in err and f"chatguard index examples/site --out {missing}" in err
    # Refused before any runtime started: asserted as such, not as "it took under 10 s",
    # which a loaded machine could break and a slow start could pass.
    assert started == []


def test_an_incompatible_index_says_rebuild(
    tmp_path: Path, own_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "knowledge"
    build(own_site, out, IndexPolicy((), ()), HashingEmbedder(256))  # not the runtime's 1024
    code = main(["chat", "hello", "--knowledge", str(out), "--site", str(own_site)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "rebuild" in err and f"chatguard index {own_site} --out {out}" in err


def test_a_missing_site_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--site", str(tmp_path / "nope"), "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_chat_answers_from_your_own_site(
    tmp_path: Path, own_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "knowledge"
    assert main(["index", str(own_site), "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out  # the whole --out, not its last folder
    argv = ["chat", "When does the bakery open?", "--knowledge", str(out), "--json"]
    code = main([*argv, "--site", str(own_site)])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["status"] == 200
    assert "seven" in printed["body"]["reply"]
    assert printed["body"]["sources"][0]["page"] == "/notes/hours.html"


def test_serve_shows_your_own_site(own_site: Path) -> None:
    dispatcher = Dispatcher(object(), EdgeOptions(), site_dir=own_site)
    request = Request("GET", "/notes/hours.html", {}, b"", ("127.0.0.1", 5000))
    answer = dispatcher(request)
    assert answer.status == 200 and b"opens at seven" in answer.body
    default = Dispatcher(object(), EdgeOptions())
    assert default(request).status == 404  # not a page of the sample site


def test_an_interrupted_start_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], knowledge_dir: Path
) -> None:
    def interrupted(self: LocalRuntime) -> LocalRuntime:
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalRuntime, "start", interrupted)
    assert main(["chat", "hello", "--knowledge", str(knowledge_dir)]) == 130
    assert capsys.readouterr().err.strip() == "chatguard: interrupted"


def _cli(*argv: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "chatguard", *argv], cwd=ROOT, text=True,
        stderr=subprocess.PIPE, **kwargs,  # type: ignore[call-overload]
    )  # fmt: skip


# `python -X importtime` reports each import on stderr as it ends: the first of moto's
# happens inside the runtime's start, so the test waits for it rather than sleeping and
# hoping the signal lands there (too early on a loaded machine, too late on a fast one).
IMPORT_REPORT = re.compile(r"^import time:.*\|\s+moto(\.|$)")


@pytest.mark.slow
def test_ctrl_c_while_chat_starts_prints_no_traceback(knowledge_dir: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "chatguard", "chat", "hello",
         "--knowledge", str(knowledge_dir)],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    early = []
    for line in process.stderr:
        early.append(line)
        if IMPORT_REPORT.match(line):
            break  # inside the runtime's start
    process.send_signal(signal.SIGINT)
    _out, rest = process.communicate(timeout=60)
    said = [*early, *rest.splitlines(keepends=True)]
    err = "".join(line for line in said if not line.startswith("import time:"))
    if process.returncode == 0:
        pytest.skip("the chat finished before the signal arrived")
    assert process.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err


@pytest.mark.slow
def test_a_reader_that_leaves_early_is_no_error(knowledge_dir: Path) -> None:
    read, write = os.pipe()
    process = _cli("chat", "hello", "--knowledge", str(knowledge_dir), stdout=write)
    os.close(write)
    os.close(read)  # like `| head -1` exiting before the chat prints
    _out, err = process.communicate(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert process.returncode == 0


def test_an_ipv6_server_prints_a_url_that_works(runtime: LocalRuntime) -> None:
    from local.server.uvicorn_server import ChatServer

    try:
        server = ChatServer(("::1", 0), runtime, EdgeOptions())
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert server.url.startswith("http://[::1]:")
        port = int(server.url.rsplit(":", 1)[1])
        assert server.socket.family == socket.AF_INET6 and port > 0
    finally:
        server.server_close()


def test_spend_without_a_region_suggests_region_or_local(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "aws-config"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    assert main(["spend"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--region" in err and "--local" in err


def test_index_names_empty_pages_and_the_whole_out_path(
    tmp_path: Path, own_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (own_site / "notes" / "todo.md").write_text("---\ntitle: To do\n---\n")
    out = tmp_path / "deep" / "knowledge"
    assert main(["index", str(own_site), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "indexed 2 pages (1 empty, skipped: notes/todo.md)" in printed
    assert printed.rstrip().endswith(f"-> {out}")


def test_index_says_where_the_artifact_is_from_the_working_directory(
    tmp_path: Path,
    own_site: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under the working directory it reads ./out (a path from here, not from the project
    or the site); from a sibling folder, the relative way there."""
    monkeypatch.chdir(tmp_path)
    assert main(["index", "mysite", "--out", "out"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("-> ./out")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["index", "../mysite", "--out", "../out"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("-> ../out")
