"""Each chunk's outbound in-site links (build.resolve_links), on real generator output
(tests/data/real_pages, see the SOURCE notes): recorded only to another indexed page and
to an anchor that page has, in the section's own text, and kept in the artifact; an index
written before links were recorded still loads, with none.

The naive variant (every href as written) is shown on the same pages to break the
invariant: the pages link to pages that are not indexed and to other sites.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.build import build, collect, plan, resolve_links
from indexer.html_reader import read_html
from indexer.pages import Page
from indexer.policy import IndexPolicy
from steps.lib.grounding.knowledge import (
    LINK_DTYPES,
    Chunk,
    load_knowledge,
    normalise_page,
    seal,
)
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.runtime.errors import KnowledgeError

REAL_PAGES = Path(__file__).resolve().parents[1] / "data" / "real_pages"
POLICY = IndexPolicy((), ())
GENERATORS = sorted(p.name for p in REAL_PAGES.iterdir() if p.is_dir())


def page_ids(site: Path) -> dict[str, frozenset[str]]:
    """page path -> the fragments its file can be linked to, read from the file."""
    pages, _ = collect(site, POLICY)
    return {
        normalise_page(p.path): read_html((site / p.source).read_text(encoding="utf-8")).ids
        for p in pages
    }


@pytest.mark.parametrize("generator", GENERATORS)
def test_links_go_only_to_another_indexed_pages_anchor_that_it_has(generator: str) -> None:
    site = REAL_PAGES / generator
    source_chunks, _ = plan(site, POLICY)
    ids = page_ids(site)
    indexed = {normalise_page(c.page) for _, c in source_chunks}
    links = [(c, target, text) for _, c in source_chunks for target, text in c.links]
    if generator == "doxygen":
        assert links  # the invariant is not checked on nothing
    for chunk, target, text in links:
        page, _, anchor = target.partition("#")
        assert normalise_page(page) in indexed and normalise_page(page) != normalise_page(
            chunk.page
        )
        assert anchor and anchor in ids[normalise_page(page)], target
        assert text in chunk.text  # a link of the section's own text


def test_the_hrefs_as_written_would_break_it() -> None:
    """The naive variant, on the same Doxygen pages: keeping every body-text href."""
    pages, _ = collect(REAL_PAGES / "doxygen", POLICY)
    files = {p.source for p in pages}
    hrefs = [href for p in pages for b in p.blocks for href, _ in b.links]
    unindexed = [h for h in hrefs if "#" in h and h.partition("#")[0] not in files | {""}]
    assert unindexed  # e.g. group__mdb__cursor.html, not vendored
    kept = [link for _, c in plan(REAL_PAGES / "doxygen", POLICY)[0] for link in c.links]
    assert kept and len(kept) < len(hrefs)


def test_a_member_doc_links_to_the_flag_it_names() -> None:
    """Doxygen's <a class="el"> in mdb_env_open()'s text lands on MDB_NOSYNC's own anchor."""
    source_chunks, _ = plan(REAL_PAGES / "doxygen", POLICY)
    nosync = [
        (c.heading, target)
        for _, c in source_chunks
        for target, text in c.links
        if text == "MDB_NOSYNC" and c.page == "/group__mdb__copy.html"
    ]
    assert nosync
    assert all(t == "/group__mdb__env.html#ga5791dd1adb09123f82dd1f331209e12e" for _, t in nosync)
    assert any(h.endswith("mdb_env_open()") for h, _ in nosync)


_PAGES = ("a.html", "b.html", "sub/c.html")
_HREF = st.tuples(
    st.sampled_from(["", "a.html", "b.html", "sub/c.html", "c.html", "../b.html", "x.html",
                     "https://example.org/b.html", "/b.html"]),
    st.sampled_from(["", "#one", "#two", "#none"]),
).map("".join)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(_PAGES),
    st.lists(st.tuples(_HREF, st.sampled_from(["go", "MDB_NOSYNC"])), max_size=8),
    st.sets(st.sampled_from(_PAGES), min_size=1),
)
def test_a_link_is_kept_iff_it_lands_on_another_indexed_pages_anchor(
    source: str, hrefs: list[tuple[str, str]], indexed: set[str]
) -> None:
    ids = {"a.html": frozenset({"one"}), "b.html": frozenset({"one", "two"}),
           "sub/c.html": frozenset({"two"})}  # fmt: skip
    pages = [Page(p, "/" + p, p, (), ids[p]) for p in _PAGES]
    indexed |= {source}
    chunks = [(p, Chunk(f"/{p}#x", "/" + p, p, "text", 1)) for p in sorted(indexed)]
    chunks = [(p, Chunk(c.id, c.page, c.heading, c.text, 1, tuple(hrefs) if p == source else ()))
              for p, c in chunks]  # fmt: skip
    (kept,) = [c.links for p, c in resolve_links(pages, chunks) if p == source]
    expected = []
    for href, text in hrefs:
        target, _, anchor = href.partition("#")
        if "//" in target or target.startswith("/") or not target:
            continue
        folder = source.rpartition("/")[0]
        resolved = target.replace("../", "") if folder else target
        resolved = f"{folder}/{resolved}" if folder and "../" not in target else resolved
        if resolved in indexed and resolved != source and anchor in ids[resolved]:
            expected.append((f"/{resolved}#{anchor}", text))
    assert list(kept) == list(dict.fromkeys(expected))


def test_links_round_trip_through_the_artifact(tmp_path: Path) -> None:
    build(REAL_PAGES / "doxygen", tmp_path / "k", POLICY, HashingEmbedder())
    kb = load_knowledge(tmp_path / "k", embedder=HashingEmbedder.id)
    written = [c.links for _, c in plan(REAL_PAGES / "doxygen", POLICY)[0]]
    assert [tuple(kb.links_of(i)) for i in range(len(kb.chunks))] == written


def _without_links(out: Path) -> None:
    """The header an index built before links were recorded has: no link arrays."""
    path = out / "knowledge.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    for key in LINK_DTYPES:
        del metadata["index"]["layout"][key]
    path.write_bytes(seal(metadata))


def test_an_index_without_links_still_loads_with_none(tmp_path: Path) -> None:
    build(REAL_PAGES / "doxygen", tmp_path / "k", POLICY, HashingEmbedder())
    before = load_knowledge(tmp_path / "k")
    assert any(before.links_of(i) for i in range(len(before.chunks)))
    load_knowledge.cache_clear()
    _without_links(tmp_path / "k")
    kb = load_knowledge(tmp_path / "k")
    assert all(kb.links_of(i) == [] for i in range(len(kb.chunks)))
    assert list(kb.chunks) == list(before.chunks)


def test_link_arrays_that_do_not_fit_the_chunks_are_refused_in_one_line(tmp_path: Path) -> None:
    build(REAL_PAGES / "doxygen", tmp_path / "k", POLICY, HashingEmbedder())
    path = tmp_path / "k" / "knowledge.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    offset, count = metadata["index"]["layout"]["link_ptr"]
    metadata["index"]["layout"]["link_ptr"] = [offset, count - 1]
    path.write_bytes(seal(metadata))
    with pytest.raises(KnowledgeError) as refused:
        load_knowledge(tmp_path / "k")
    assert "\n" not in str(refused.value) and "chatguard index" in str(refused.value)
