from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import retrieval as bench


def test_the_benchmark_rewrites_only_its_own_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# Benchmarks\n\n<!-- bench:pipeline:start -->\nP\n<!-- bench:pipeline:end -->\n\n"
        f"{bench.START}\nold figures\n{bench.END}\n\ntrailing notes\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(bench, "DOC", doc)
    bench.write_section("new figures")
    text = doc.read_text(encoding="utf-8")
    assert f"{bench.START}\nnew figures\n{bench.END}" in text
    assert "old figures" not in text
    assert "<!-- bench:pipeline:start -->\nP\n<!-- bench:pipeline:end -->" in text
    assert text.endswith("trailing notes\n")


def test_the_benchmark_adds_its_section_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nother\n", encoding="utf-8")
    monkeypatch.setattr(bench, "DOC", doc)
    bench.write_section("figures")
    assert doc.read_text(encoding="utf-8").startswith("# Benchmarks\n\nother\n")
    assert f"{bench.START}\nfigures\n{bench.END}" in doc.read_text(encoding="utf-8")
