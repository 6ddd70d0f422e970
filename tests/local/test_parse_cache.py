"""The parsed ASL program is kept between runs (local/engine/parse_cache.py): parsed once per
definition, reused by the next process, parsed again when the entry is damaged, never
unpickled from a directory others can write, and the cached program runs the workflow."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from local.engine import parse_cache


class CountingParse:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, definition: str) -> Any:
        self.calls += 1
        return {"parsed": definition}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.ENV_DIR, str(where))
    return where


def test_a_definition_is_parsed_once_across_runs(cache: Path) -> None:
    parse = CountingParse()
    first = parse_cache.load_or_parse('{"StartAt": "A"}', parse)
    again = parse_cache.load_or_parse('{"StartAt": "A"}', parse)
    other = parse_cache.load_or_parse('{"StartAt": "B"}', parse)
    assert parse.calls == 2
    assert first == again == {"parsed": '{"StartAt": "A"}'} and other["parsed"].endswith('B"}')
    assert oct(cache.stat().st_mode & 0o777) == oct(0o700)


def test_a_damaged_entry_is_parsed_again_and_rewritten(cache: Path) -> None:
    parse = CountingParse()
    parse_cache.load_or_parse("{}", parse)
    entry = cache / parse_cache.entry_name("{}")
    entry.write_bytes(b"not a pickle")
    assert parse_cache.load_or_parse("{}", parse) == {"parsed": "{}"}
    assert parse.calls == 2
    assert parse_cache.load_or_parse("{}", parse) == {"parsed": "{}"} and parse.calls == 2


def test_a_cache_others_can_write_is_never_read(cache: Path) -> None:
    parse = CountingParse()
    parse_cache.load_or_parse("{}", parse)
    os.chmod(cache, 0o777)
    parse_cache.load_or_parse("{}", parse)
    assert parse.calls == 2


def test_an_empty_setting_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(parse_cache.ENV_DIR, "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    parse = CountingParse()
    parse_cache.load_or_parse("{}", parse)
    parse_cache.load_or_parse("{}", parse)
    assert parse.calls == 2 and not any(tmp_path.iterdir())


def test_the_cached_program_runs_the_workflow(
    cache: Path, monkeypatch: pytest.MonkeyPatch, make_runtime: Any
) -> None:
    """A fresh process's view: the in-memory copy forgotten, the program read from disk."""
    from local.engine import step_functions as engine

    monkeypatch.setattr(engine, "_PARSED", {})
    make_runtime().close()  # parses and writes the entry
    assert len(list(cache.glob("asl-*.pickle"))) == 1
    monkeypatch.setattr(engine, "_PARSED", {})
    monkeypatch.setattr(engine, "_parse", lambda _d: pytest.fail("parsed again"))
    outcome = make_runtime().send({"message": "What is a rate-based rule?"}, ip="192.0.2.9")
    assert outcome.status == 200 and outcome.body["reply"]
