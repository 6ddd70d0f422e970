"""Help that teaches: every subcommand's --help describes every option in one line and ends
with an example that parses; nothing is offered that the command then refuses; and the
hints a newcomer meets say what to do."""

from __future__ import annotations

import argparse
import shlex
import socket
from pathlib import Path

import pytest

from chatguard.cli import EXAMPLES, build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = sorted(_subcommands())


def test_every_subcommand_has_an_example() -> None:
    assert sorted(EXAMPLES) == SUBCOMMANDS


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_describes_every_option_and_ends_with_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = _subcommands()[name]
    for action in command._actions:
        where = action.option_strings or [action.dest]
        assert action.help and action.help.strip(), f"{name} {where} has no help"
        assert "\n" not in action.help, f"{name} {where}: help is one line"
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    headings = [line for line in out.splitlines() if line in ("example:", "examples:")]
    assert len(headings) == 1, out  # one section (doctor had "example:" and "examples:")
    assert f"{headings[0]}\n  {EXAMPLES[name]}" in out
    example = shlex.split(EXAMPLES[name])[1:]
    assert callable(build_parser().parse_args(example).func)


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["enable-model", "--local", "http://127.0.0.1:8787"], "--local"),
        (["trace", "last", "--local", "http://x", "--profile", "p"], "--profile"),
        (["trace", "last", "--local", "http://x", "--region", "eu-west-1"], "--region"),
        (["trace", "last", "--local", "http://x", "--stack", "s"], "--stack"),
    ],
)
def test_nothing_is_offered_that_the_command_refuses(
    argv: list[str], refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([argv[0], "--help"])
    assert refused not in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2


def _one_line_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_an_unknown_option_points_at_the_subcommands_help_and_the_closest_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _one_line_usage_error(["serve", "--ceiling", "1"], capsys)
    assert "chatguard serve --help" in err and "did you mean --daily-ceiling-usd" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--daily-ceiling-usd", "abc"], "'abc' is not an amount in USD, e.g. 0.50"),
        (["serve", "--monthly-ceiling-usd", "-1"], "above zero"),
        (["serve", "--visitor-cost-share", "2"], "at most 1, e.g. 0.05"),
    ],
)
def test_a_bad_amount_says_what_an_amount_looks_like(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_usage_error(argv, capsys)
    assert says in err and "Decimal" not in err


def test_a_dead_local_server_is_one_line_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["spend", "--local", f"http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert "is `chatguard serve` running" in err and "urlopen" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_aws_credentials_say_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["billing-services", "--region", "eu-west-1"]) == 2
    err = capsys.readouterr().err
    assert "aws configure" in err and "--profile" in err
