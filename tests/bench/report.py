"""Each benchmark owns one marked section of docs/benchmarks.md and rewrites only that."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def write_section(name: str, title: str, body: str, doc: Path = DOC) -> None:
    """Replace the section between `name`'s markers, or append it under `title`.

    The file is re-read right before writing so that sections written by other benchmarks
    (possibly moments earlier) survive.
    """
    start, end = markers(name)
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    section = f"{start}\n{body}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n## {title}\n\n{section}\n"
    doc.write_text(text, encoding="utf-8")
