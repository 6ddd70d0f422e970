"""S7's "also see" follows the quoted section's own links (retrieval.linked_pages), on
real Doxygen output (tests/data/real_pages/doxygen: LMDB's pages, see its SOURCE) and the
frozen LMDB questions: the function quoted for a flag question links to the flag's own
section, and that page is offered first. The naive variant (the next pages by score,
FOLLOW_LINKS off) is run on the same index and questions."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from indexer.build import build
from steps.lib.grounding import retrieval
from steps.lib.grounding.knowledge import Knowledge, load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder
from tests.retrieval.conftest import PRETTY_POLICY

DATA = Path(__file__).resolve().parents[1] / "data"
# Frozen LMDB questions whose answer is a flag's page while S7 quotes the function page.
FLAG_QUESTIONS = {
    q["question"]: q["page"]
    for q in json.loads((DATA / "lmdb_questions.json").read_text(encoding="utf-8"))["questions"]
    if q["page"] in ("/group__mdb__put", "/group__mdb__dbi__open")
}


@pytest.fixture(scope="module")
def doxygen(tmp_path_factory: pytest.TempPathFactory) -> Knowledge:
    out = tmp_path_factory.mktemp("doxygen-links")
    build(DATA / "real_pages" / "doxygen", out, PRETTY_POLICY, HashingEmbedder())
    return load_knowledge(out, embedder=HashingEmbedder.id)


def first_also(kb: Knowledge, question: str, follow: bool) -> tuple[str, str | None]:
    with mock.patch.object(retrieval, "FOLLOW_LINKS", follow):
        found = retrieval.degraded_choice(kb, question)
    assert found is not None
    return found.chunk.page, (found.also[0] if found.also else None)


def test_the_first_also_see_is_the_page_the_quoted_function_links_to(doxygen: Knowledge) -> None:
    assert retrieval.FOLLOW_LINKS
    followed = naive = 0
    for question, expected in FLAG_QUESTIONS.items():
        quoted, first = first_also(doxygen, question, True)
        if quoted == expected:
            continue  # quoted from the right page: no link needed
        assert quoted == "/group__mdb__copy"  # Doxygen files lmdb.h's functions there
        followed += first == expected
        naive += first_also(doxygen, question, False)[1] == expected
    assert followed > naive  # the naive variant offers another page first


def test_a_link_is_followed_only_when_it_or_its_target_shares_a_term(doxygen: Knowledge) -> None:
    """mdb_env_open()'s text links to Write Flags (MDB_RESERVE) too: a question about
    syncing never gets that page for the link alone; one about reserving space does."""
    quoted = next(
        i for i, c in enumerate(doxygen.chunks)
        if c.heading.endswith("mdb_env_open()") and "MDB_RESERVE" in c.text
    )  # fmt: skip
    targets = {t.partition("#")[0] for t, _ in doxygen.links_of(quoted)}
    assert "/group__mdb__put" in targets  # MDB_RESERVE's page

    def linked(question: str) -> list[str]:
        query = retrieval.as_query(question)
        lexical = retrieval.lexical_scores(doxygen, query)
        return retrieval.linked_pages(doxygen, quoted, query, lexical, lexical)

    assert "/group__mdb__put" not in linked("Can it skip the fsync?")
    assert "/group__mdb__put" in linked("Can I just reserve space for the data?")


def test_an_index_without_links_answers_as_before(doxygen: Knowledge) -> None:
    bare = Knowledge(**{
        **{f: getattr(doxygen, f) for f in doxygen.__dataclass_fields__},
        "link_ptr": doxygen.link_ptr[:0], "link_strings": (),
    })  # fmt: skip
    for question in FLAG_QUESTIONS:
        with mock.patch.object(retrieval, "FOLLOW_LINKS", False):
            before = retrieval.degraded_choice(doxygen, question)
        assert retrieval.degraded_choice(bare, question) == before
