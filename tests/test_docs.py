"""The docs are self-contained and their commands work as written: no reference outside
the repository, every relative link resolves, every `chatguard` command line in the README
and docs/ parses with the real CLI, and the README puts `chatguard` on PATH before its
first bare use."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from chatguard.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
COMMAND = re.compile(r"^(?:\$ )?(?:\.venv/bin/)?chatguard (.+)$")


def _commands(doc: Path) -> list[tuple[int, str]]:
    """(line number, argument string) of every `chatguard` command in a code block."""
    text = doc.read_text(encoding="utf-8")
    found = []
    for block in FENCE.finditer(text):
        first_line = text[: block.start(1)].count("\n") + 1
        joined = block.group(1).replace("\\\n", " ")  # shell line continuations
        for offset, line in enumerate(joined.splitlines()):
            match = COMMAND.match(line.strip())
            if match:
                found.append((first_line + offset, match.group(1)))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_nothing_outside_the_repository_is_cited(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert "shared/" not in text and "DESIGN.md" not in text
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def _case(doc: Path, number: int, arguments: str) -> object:
    return pytest.param(arguments, id=f"{doc.name}:{number}")


CASES = [_case(doc, n, args) for doc in DOCS for n, args in _commands(doc)]


def test_the_docs_have_commands_to_check() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("arguments", CASES)
def test_every_documented_command_parses(arguments: str) -> None:
    argv = shlex.split(arguments, comments=True)
    try:
        parsed = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse refused it
        pytest.fail(f"`chatguard {arguments}` does not parse (exit {exc.code})")
    assert callable(parsed.func)


def test_the_readme_activates_the_venv_before_its_first_bare_command() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    activate = next(i for i, line in enumerate(lines) if line.startswith(". .venv/bin/activate"))
    first_bare = min(n for n, _ in _commands(ROOT / "README.md")) - 1
    assert activate < first_bare


def test_the_activated_venv_has_chatguard_on_path() -> None:
    if not (ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("no .venv here (make venv creates it)")
    done = subprocess.run(
        ["bash", "-c", ". .venv/bin/activate && chatguard --version"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("chatguard "), done.stderr
