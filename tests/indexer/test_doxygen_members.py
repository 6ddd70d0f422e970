"""Doxygen member sections (chunk_page's `member_sections`, measured in bench:degraded and
not the default) on real output (tests/data/real_pages/doxygen, see its SOURCE): each
documented member (a flag's #define, a function, a field) is its own chunk, headed by its
name, never folded into a neighbour by the short-section merge; no other generator's page
is chunked differently.

Each check also runs the naive variant (the shipped chunking, which merges short sections
whatever they are) on the same text and shows it failing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.chunking import MEMBER_SECTIONS, MIN_TOKENS, chunk_page
from indexer.html_reader import DOXYGEN_MEMBER_TITLE
from indexer.pages import PAGE_SUFFIXES, Block, Page, parse_page
from steps.lib.grounding.knowledge import Chunk

REAL_PAGES = Path(__file__).resolve().parents[1] / "data" / "real_pages"
DOXYGEN = REAL_PAGES / "doxygen"


def page_of(path: Path, root: Path) -> Page:
    relative = path.relative_to(root).as_posix()
    return parse_page(relative, path.read_text(encoding="utf-8"))


def unmarked(page: Page) -> Page:
    """The page's blocks with no member mark."""
    return replace(page, blocks=tuple(replace(b, member=False) for b in page.blocks))


def holding(chunks: list[Chunk], words: str) -> Chunk:
    (found,) = [c for c in chunks if words in c.text]
    return found


@pytest.mark.parametrize(
    ("file", "member", "doc", "other_doc"),
    [
        # MDB_NOSYNC was inside "Environment Flags > Macros", a 316-token run of #defines
        ("group__mdb__env.html", "MDB_NOSYNC", "don't fsync after commit", "read only"),
        # MDB_NOOVERWRITE was under "Write Flags > Detailed Description > LMDB Command Line Tools"
        ("group__mdb__put.html", "MDB_NOOVERWRITE", "Don't write if the key already exists",
         "overwrite the current key/data pair"),
        ("group__Version.html", "MDB_VERSION_PATCH", "Library patch version",
         "Library minor version"),
    ],
)  # fmt: skip
def test_a_members_doc_is_its_own_chunk_named_by_the_member(
    file: str, member: str, doc: str, other_doc: str
) -> None:
    html = (DOXYGEN / file).read_text(encoding="utf-8")
    assert f'class="{DOXYGEN_MEMBER_TITLE}"' in html  # Doxygen's markup, not a guess by path
    page = page_of(DOXYGEN / file, DOXYGEN)
    assert MIN_TOKENS > 0
    assert MEMBER_SECTIONS  # the shipped chunking
    chunk = holding(chunk_page(page), doc)
    assert chunk.heading.endswith(f" > {member}")
    assert chunk.id.partition("#")[2] in html  # the member's own anchor, on the page
    assert other_doc not in chunk.text  # no neighbour folded in
    naive = holding(chunk_page(page, member_sections=False), doc)
    assert not naive.heading.endswith(f" > {member}") or other_doc in naive.text


def test_every_member_of_a_flag_page_is_a_chunk() -> None:
    page = page_of(DOXYGEN / "group__mdb__env.html", DOXYGEN)
    members = [b.text.replace("\\", "") for b in page.blocks if b.member]
    assert len(members) >= 10  # MDB_FIXEDMAP ... MDB_NOMEMINIT
    headings = [c.heading.rpartition(" > ")[2] for c in chunk_page(page)]
    assert all(m in headings for m in members)
    assert chunk_page(unmarked(page)) == chunk_page(page, member_sections=False)  # the mark
    naive = [c.heading.rpartition(" > ")[2] for c in chunk_page(page, member_sections=False)]
    assert sum(m in naive for m in members) < len(members) / 2  # all but a few were folded


def other_generators_pages() -> list[tuple[Path, Path]]:
    return [
        (path, folder)
        for folder in sorted(REAL_PAGES.iterdir())
        if folder.is_dir() and folder.name != "doxygen"
        for path in sorted(folder.rglob("*"))
        if path.suffix in PAGE_SUFFIXES
    ]


@pytest.mark.parametrize(("path", "root"), other_generators_pages(), ids=lambda v: str(v)[-40:])
def test_other_generators_pages_are_chunked_as_before(path: Path, root: Path) -> None:
    page = page_of(path, root)
    assert not any(b.member for b in page.blocks)
    assert chunk_page(page) == chunk_page(page, member_sections=False)


_TEXT = st.sampled_from(["one line.", "a short flag doc.", " ".join(["word"] * 60)])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _TEXT), min_size=1, max_size=12))
def test_a_member_section_is_never_merged_nor_merged_into(sections: list[tuple[bool, str]]) -> None:
    blocks: list[Block] = []
    for n, (member, text) in enumerate(sections):
        blocks += [Block(2, f"Name{n}", f"id{n}", member), Block(0, f"{text} m{n}x")]
    chunks = chunk_page(Page("p.html", "/p", "Page", tuple(blocks)), member_sections=True)
    for n, (member, _) in enumerate(sections):
        if member:
            (own,) = [c for c in chunks if f"m{n}x" in c.text]
            assert own.heading == f"Page > Name{n}"
            assert own.id == f"/p#id{n}"
            assert [f"m{k}x" in own.text for k in range(len(sections))].count(True) == 1
