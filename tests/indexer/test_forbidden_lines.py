"""`chatguard index` refusing a forbidden term (issue 27, item 10): each line says whether
the term is in a heading or in the text under it, and says it once however many chunks a
long section makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.build import plan
from indexer.policy import IndexPolicy

PARAGRAPH = "Project Zephyr ships the harbour ledger with audited totals every night. " * 12


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    sections = "\n\n".join(f"{PARAGRAPH}\n\nMore about the ledger, part {i}." for i in range(8))
    (root / "ledger.md").write_text(f"# The ledger\n\n{sections}\n")
    (root / "plans.md").write_text("# Zephyr plans\n\nNothing to see.\n")
    return root


def test_each_place_is_one_line_saying_heading_or_text(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(site), "--out", str(tmp_path / "k"), "--forbidden", "Zephyr",
            "--embedder", "hashing"]  # fmt: skip
    assert main(argv) != 0
    err = capsys.readouterr().err
    hits = [line.strip() for line in err.splitlines() if "contains forbidden term" in line]
    assert hits == [
        "ledger.md: text under heading 'The ledger' contains forbidden term 'Zephyr'",
        "plans.md: heading 'Zephyr plans' contains forbidden term 'Zephyr'",
    ], err
    assert not (tmp_path / "k").exists()


def test_the_long_section_is_several_chunks(site: Path) -> None:
    """Why one line per place matters: each chunk used to be a line of its own."""
    chunks, _excluded = plan(site, IndexPolicy((), (), "file"))
    hits = [c for source, c in chunks if source == "ledger.md" and "Zephyr" in c.text]
    assert len(hits) > 1
