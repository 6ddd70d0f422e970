"""Every `chatguard index` command a refusal suggests is safe to run as printed (issue 27,
items 2 and 3): it never writes into the site folder (whatever is there gets published),
never overwrites an index the user named, and names only flags the command has."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from chatguard.cli import build_parser, main, parse
from indexer.build import build
from indexer.policy import IndexPolicy
from local.commands.chat_demo_serve import local_settings, settings_for
from local.commands.preflight import knowledge_problem, pairing_problem
from steps.lib.grounding.knowledge import load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder


@pytest.fixture(autouse=True)
def hashing_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes here are built by the hashing stand-in (fast); queries are embedded alike."""
    monkeypatch.setenv("CHATGUARD_EMBEDDER", "hashing")


@pytest.fixture
def bakery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site of the user's, with the working directory beside it (as a user types)."""
    site = tmp_path / "bakery"
    site.mkdir()
    (site / "index.md").write_text("# Harbour bakery\n\nWe bake sourdough every morning.\n")
    (site / "hours.md").write_text("# Opening hours\n\nWe open at seven, close at three.\n")
    monkeypatch.chdir(tmp_path)
    return site


def _refusal(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def _suggested(line: str) -> list[str]:
    """The `chatguard index ...` command the line suggests, as argv for `main`."""
    found = re.search(r"`chatguard (index [^`]+)`", line)
    assert found, line
    return shlex.split(found.group(1))


def test_the_site_folder_given_as_the_index_gets_an_index_beside_it(
    bakery: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "When do you open?", "--site", "bakery", "--knowledge", "bakery"]) == 2
    line = _refusal(capsys)
    assert "is in the site folder bakery" in line and "--knowledge build/bakery-knowledge" in line
    command = _suggested(line)
    assert command == ["index", "bakery", "--out", "build/bakery-knowledge", "--embedder",
                       "hashing"]  # fmt: skip
    assert main(command) == 0  # run as printed
    assert sorted(p.name for p in bakery.iterdir()) == ["hours.md", "index.md"]
    load_knowledge.cache_clear()
    settings = local_settings(knowledge_dir="build/bakery-knowledge")
    assert knowledge_problem(settings, bakery) is None
    assert pairing_problem(settings, bakery) == (None, None)


def test_the_old_suggestion_wrote_the_index_into_the_published_site(bakery: Path) -> None:
    """The naive variant: `chatguard index S --out S`, as the refusal used to print it."""
    assert main(["index", "bakery", "--out", "bakery", "--embedder", "hashing"]) == 0
    assert (bakery / "knowledge.json").is_file()  # published with the site's pages


def test_demo_takes_the_site_flag_its_refusal_names_and_keeps_the_named_index(
    bakery: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knowledge = tmp_path / "bakery-knowledge"
    build(bakery, knowledge, IndexPolicy(("drafts/**",), (), "file"), HashingEmbedder())
    load_knowledge.cache_clear()
    assert main(["demo", "--knowledge", str(knowledge)]) == 2
    line = _refusal(capsys)
    assert "add `--site DIR`, the folder 'bakery' it was built from" in line
    assert "--out" not in line  # nothing that would overwrite the index the user named
    args = parse(build_parser(), ["demo", "--knowledge", str(knowledge), "--site", "bakery"])
    assert Path(settings_for(args).knowledge_dir) == knowledge  # the pair is accepted


def test_an_index_of_another_site_named_with_a_site_is_kept(
    bakery: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--site S --knowledge K`, K built from another site: the fix builds S's own index
    beside K instead of overwriting K."""
    sample = Path(__file__).resolve().parents[2] / "examples" / "site"
    other = tmp_path / "sample-knowledge"
    build(sample, other, IndexPolicy.from_context(), HashingEmbedder())
    load_knowledge.cache_clear()
    assert main(["chat", "hours?", "--site", "bakery", "--knowledge", str(other)]) == 2
    line = _refusal(capsys)
    command = _suggested(line)
    assert command[command.index("--out") + 1] == "build/bakery-knowledge"
    assert "add `--knowledge build/bakery-knowledge`" in line
