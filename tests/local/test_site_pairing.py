"""An index knows the site it was built from: `chat`, `serve` and `demo` refuse a site
and an index that do not belong together, and warn when the site's pages changed since
the build, each in one line with the exact `chatguard index` command; nothing starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chatguard.cli import main
from indexer.build import build
from indexer.policy import IndexPolicy
from indexer.provenance import drift, read_record
from local.commands.chat_demo_serve import local_settings
from local.commands.preflight import index_permalinks, pairing_problem
from local.engine.runtime import LocalRuntime
from steps.lib.grounding.knowledge import load_knowledge, seal
from steps.lib.providers.hashing_embedder import HashingEmbedder

SAMPLE_SITE = Path(__file__).resolve().parents[2] / "examples" / "site"
HOURS = "# Opening hours\n\nThe harbour bakery opens at seven and closes at three.\n"


@pytest.fixture(autouse=True)
def hashing_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """These indexes are built by the hashing stand-in (fast); the commands must embed
    queries with it too, or every pair is refused for its embedder before its site."""
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "hashing")


@pytest.fixture
def bakery(tmp_path: Path) -> Path:
    site = tmp_path / "bakery"
    (site / "notes").mkdir(parents=True)
    (site / "index.md").write_text("# Harbour bakery\n\nWe bake sourdough every morning.\n")
    (site / "notes" / "hours.md").write_text(HOURS)
    (site / "notes" / "bread.md").write_text("# Bread\n\nSourdough, rye and spelt loaves.\n")
    return site


def index(site: Path, out: Path, permalinks: str = "file") -> Path:
    policy = IndexPolicy(("drafts/**",), (), permalinks)
    build(site, out, policy, HashingEmbedder())
    load_knowledge.cache_clear()
    return out


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> list[LocalRuntime]:
    started: list[LocalRuntime] = []
    monkeypatch.setattr(LocalRuntime, "start", lambda self: started.append(self) or self)
    return started


@pytest.fixture
def sample_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample index as the default one (no --knowledge)."""
    out = tmp_path / "sample-knowledge"
    build(SAMPLE_SITE, out, IndexPolicy.from_context(), HashingEmbedder())
    load_knowledge.cache_clear()
    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(out))
    return out


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_chat_on_another_site_without_its_index_is_refused_with_the_command(
    bakery: Path,
    sample_index: Path,
    nothing_starts: list[LocalRuntime],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's first report: it answered from the sample site's pages."""
    assert main(["chat", "What are the opening hours?", "--site", str(bakery)]) == 2
    err = one_line(capsys)
    assert "built from site 'site'" in err
    assert f"`chatguard index {bakery} --out build/bakery-knowledge --embedder hashing`" in err
    assert "add `--knowledge build/bakery-knowledge`" in err
    assert nothing_starts == []


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["demo"], ["chat", "hello"]])
def test_an_index_of_another_site_beside_the_default_site_is_refused(
    bakery: Path,
    tmp_path: Path,
    command: list[str],
    nothing_starts: list[LocalRuntime],
    capsys: pytest.CaptureFixture[str],
) -> None:
    knowledge = index(bakery, tmp_path / "bakery-knowledge")
    assert main([*command, "--knowledge", str(knowledge)]) == 2
    err = one_line(capsys)
    assert "built from site 'bakery' (3 pages)" in err and "(1 page in common)" in err
    assert "add `--site DIR`, the folder 'bakery' it was built from" in err
    assert "--out" not in err  # the index the user named is never to be overwritten
    assert nothing_starts == []


def test_an_edited_page_is_a_warning_naming_it_and_the_command(
    bakery: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knowledge = index(bakery, tmp_path / "k")
    (bakery / "notes" / "hours.md").write_text(HOURS.replace("three", "four"))
    (bakery / "notes" / "cakes.md").write_text("# Cakes\n\nOn Saturdays.\n")
    (bakery / "drafts").mkdir()
    (bakery / "drafts" / "plans.md").write_text("# Plans\n\nexcluded, so no change\n")
    argv = ["chat", "When does the bakery open?", "--knowledge", str(knowledge)]
    assert main([*argv, "--site", str(bakery), "--json"]) == 0
    err = one_line(capsys)
    assert "changed since the index" in err
    assert "1 changed (notes/hours.md), 1 added (notes/cakes.md)" in err
    assert f"`chatguard index {bakery} --out {knowledge} --embedder hashing`" in err


def test_a_current_pair_says_nothing(bakery: Path, tmp_path: Path) -> None:
    knowledge = index(bakery, tmp_path / "k")
    settings = local_settings(knowledge_dir=str(knowledge))
    assert pairing_problem(settings, bakery) == (None, None)


def test_an_index_that_records_no_site_is_refused_with_the_rebuild_command(
    bakery: Path, tmp_path: Path
) -> None:
    knowledge = index(bakery, tmp_path / "k")
    header = json.loads((knowledge / "knowledge.json").read_bytes())
    del header["site"]
    (knowledge / "knowledge.json").write_bytes(seal(header))
    settings = local_settings(knowledge_dir=str(knowledge))
    refusal, _ = pairing_problem(settings, bakery)
    assert refusal and "does not record which site" in refusal
    assert f"`chatguard index {bakery} --out {knowledge} --embedder hashing`" in refusal


def test_the_record_names_the_site_never_a_path_of_the_machine(
    bakery: Path, tmp_path: Path
) -> None:
    knowledge = index(bakery, tmp_path / "k")
    header = (knowledge / "knowledge.json").read_text(encoding="utf-8")
    assert str(tmp_path) not in header and str(Path.home()) not in header
    record = read_record(knowledge)
    assert record is not None and record.root == "bakery"
    assert sorted(record.pages) == ["index.md", "notes/bread.md", "notes/hours.md"]


def test_a_moved_or_renamed_site_still_belongs_to_its_index(bakery: Path, tmp_path: Path) -> None:
    knowledge = index(bakery, tmp_path / "k")
    moved = shutil.copytree(bakery, tmp_path / "elsewhere" / "www")
    record = read_record(knowledge)
    assert record is not None
    found = drift(record, moved)
    assert found.belongs and not found.stale
    (moved / "index.md").unlink()
    (moved / "notes" / "bread.md").unlink()  # one of three pages left: another site now
    assert not drift(record, moved).belongs


def test_serve_serves_the_pages_at_the_links_the_index_gives(bakery: Path, tmp_path: Path) -> None:
    for permalinks in ("file", "pretty"):
        knowledge = index(bakery, tmp_path / permalinks, permalinks)
        settings = local_settings(knowledge_dir=str(knowledge))
        assert index_permalinks(settings) == permalinks
