from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import cli
from indexer.build import ForbiddenContent, collect, plan
from indexer.policy import IndexPolicy, term_pattern
from steps.lib.grounding.knowledge import load_knowledge
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID
from steps.lib.runtime.settings import cdk_context

from .conftest import SAMPLE_SITE

PROSE = "Rate limiting at the edge keeps abuse away from the expensive endpoint. " * 5
ROOT = Path(__file__).resolve().parents[2]


def test_the_sample_site_builds_with_its_resume_and_drafts_excluded(tmp_path: Path) -> None:
    out = tmp_path / "knowledge"
    assert cli.main([str(SAMPLE_SITE), "--out", str(out)]) == 0
    # The default is the local semantic model, not the hashing stand-in.
    kb = load_knowledge(out, embedder=LOCAL_MODEL_ID)
    assert kb.dimensions == 384
    pages = {c.page for c in kb.chunks}
    assert len(pages) >= 15
    assert "/resume.html" not in pages and not any(p.startswith("/drafts") for p in pages)
    assert {"/index.html", "/guides/home-router.html", "/about.html", "/now.html"} <= pages


def test_the_sample_site_holds_no_forbidden_term_where_indexed() -> None:
    policy = IndexPolicy.from_context()
    assert policy.forbidden_terms, "cdk.json must list forbidden terms"
    _, excluded = plan(SAMPLE_SITE, policy)
    assert {"resume.md", "drafts/prompt-injection.md"} <= set(excluded)
    # ...and the exclusion is what keeps its private pages out: without it the build is
    # refused, on the draft's codename and on the résumé's.
    with pytest.raises(ForbiddenContent) as refused:
        plan(SAMPLE_SITE, IndexPolicy((), policy.forbidden_terms))
    hits = {(v.source, v.term) for v in refused.value.violations}
    assert hits == {
        ("drafts/prompt-injection.md", "project skerry"),
        ("resume.md", "project brisling"),
    }


def test_the_shipped_terms_are_the_sample_sites_codenames_not_generic_words(
    make_site: Callable[[dict[str, str]], Path],
) -> None:
    """A site of ordinary security writing builds with the shipped list: each term names
    something private to the sample site, found only on its excluded pages."""
    terms = IndexPolicy.from_context().forbidden_terms
    private = " ".join(
        (SAMPLE_SITE / name).read_text(encoding="utf-8").lower()
        for name in ("resume.md", "drafts/prompt-injection.md")
    )
    assert all(term in private for term in terms)
    site = make_site(
        {
            "classification.md": "# Data classes\n\nMark reports Confidential or Internal "
            "Only; the confidentiality of salary data and a customer's home address matters.",
            "posts/waf.md": PROSE,
        }
    )
    source_chunks, _ = plan(site, IndexPolicy((), terms))
    assert {source for source, _ in source_chunks} == {"classification.md", "posts/waf.md"}


def test_the_refusal_names_each_term_and_page_and_both_ways_on(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(
        {"a.md": f"# A\n{PROSE} Project Skerry.", "b/c.md": f"# C\n{PROSE} project  brisling"}
    )
    assert cli.main([str(site), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    for page, term in (("a.md", "project skerry"), ("b/c.md", "project brisling")):
        assert f"{page}: text under heading" in err and repr(term) in err  # not the heading
    assert "edit those pages" in err
    assert "--forbidden TERM" in err and '"forbidden_terms"' in err and "cdk.json" in err


def test_the_policy_comes_from_cdk_json_context() -> None:
    block = cdk_context()["chatguard/index"]
    policy = IndexPolicy.from_context()
    assert policy.exclude == tuple(block["exclude"])
    assert policy.forbidden_terms == tuple(block["forbidden_terms"])


@pytest.mark.parametrize(
    ("relative", "excluded"),
    [("resume.md", True), ("about/resume-2024.md", True), ("cv/index.md", True),
     ("drafts/x.html", True), ("posts/my-resume-tips.md", False), ("about.md", False)],
)  # fmt: skip
def test_default_exclusion_globs(relative: str, excluded: bool) -> None:
    assert IndexPolicy.from_context().excluded(relative) is excluded


def test_exclude_flag_replaces_the_configured_globs(
    make_site: Callable[[dict[str, str]], Path],
) -> None:
    site = make_site({"a.md": PROSE, "resume.md": PROSE, "private/b.md": PROSE})
    pages, excluded = collect(site, IndexPolicy(("private/*",), ()))
    assert [p.source for p in pages] == ["a.md", "resume.md"]
    assert excluded == ["private/b.md"]


def test_a_forbidden_term_fails_the_build_names_it_and_writes_nothing(
    make_site: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = make_site(
        {"ok.md": PROSE, "posts/leak.md": f"# Plans\n## Roadmap\n{PROSE} This is PROJECT SKERRY.\n"}
    )
    out = tmp_path / "out"
    code = cli.main([str(site), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "posts/leak.md" in err and "Plans > Roadmap" in err and "'project skerry'" in err
    assert not out.exists()


def test_a_refused_build_keeps_the_previous_artifact_byte_for_byte(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    site = make_site({"ok.md": PROSE})
    out = tmp_path / "out"
    assert cli.main([str(site), "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (site / "new.md").write_text(f"{PROSE}\nProject\nBrisling is below.", encoding="utf-8")
    assert cli.main([str(site), "--out", str(out)]) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_forbidden_flag_replaces_the_configured_terms(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    site = make_site({"a.md": PROSE + " Project Bluefin is secret."})
    out = tmp_path / "out"
    assert cli.main([str(site), "--out", str(out), "--forbidden", "project bluefin"]) == 1
    assert cli.main([str(site), "--out", str(out), "--forbidden", "nothing here"]) == 0


@pytest.mark.parametrize(
    ("text", "hit"),
    [("Confidential.", True), ("the confidentiality triad", False), ("home  address", True),
     ("HOME\nADDRESS", True), ("homeaddress", False), ("non-confidential", True)],
)  # fmt: skip
def test_terms_match_whole_words_and_phrases_case_insensitively(text: str, hit: bool) -> None:
    term = "home address" if "home" in text.lower() else "confidential"
    assert bool(term_pattern(term).search(text)) is hit


def test_an_empty_site_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert cli.main([str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()


def test_two_files_for_one_page_are_refused(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    site = make_site({"about.md": PROSE, "about.html": f"<p>{PROSE}</p>"})
    assert cli.main([str(site), "--out", str(tmp_path / "out")]) == 1
    assert "/about" in capsys.readouterr().err


def test_builds_are_reproducible(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    site = make_site({"a.md": PROSE, "b/index.md": "# B\n" + PROSE})
    for name in ("one", "two"):
        assert cli.main([str(site), "--out", str(tmp_path / name)]) == 0
    for file in ("knowledge.json", "embeddings.npy", "index.bin"):
        assert (tmp_path / "one" / file).read_bytes() == (tmp_path / "two" / file).read_bytes()


def test_python_dash_m_indexer_and_the_chatguard_subcommand(tmp_path: Path) -> None:
    out = tmp_path / "k"
    done = subprocess.run(
        [sys.executable, "-m", "indexer", str(SAMPLE_SITE), "--out", str(out),
         "--embedder", "hashing"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 excluded" in done.stdout and "hashing-v2 x 1024" in done.stdout
    metadata = json.loads((out / "knowledge.json").read_text(encoding="utf-8"))
    assert metadata["embedder"] == {"id": "hashing-v2", "dimensions": 1024}
    from chatguard.cli import build_parser

    args = build_parser().parse_args(["index", str(SAMPLE_SITE), "--out", str(out)])
    assert args.func is cli.run


def test_a_page_that_is_not_utf8_is_refused_by_name(
    make_site: Callable[[dict[str, str]], Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    site = make_site({"ok.md": PROSE})
    (site / "latin1.md").write_bytes("Caf\xe9 notes".encode("latin-1"))
    assert cli.main([str(site), "--out", str(tmp_path / "out")]) == 1
    assert "latin1.md is not UTF-8" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
