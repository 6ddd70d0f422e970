"""The WordNet bridge the benchmark measures (tests/bench/thesaurus.py), on a tiny
WordNet-format fixture: which synonyms it finds and what weight they get."""

from __future__ import annotations

from pathlib import Path

import pytest

from steps.lib.grounding.followup import plain_query
from tests.bench import thesaurus

# data.* lines: offset, lexicographer file, part of speech, word count (hex), then
# word / lex-id pairs, then pointers and a gloss. Lines starting with a space are the
# licence header and are skipped.
DATA = {
    "noun": [
        "  1 This software and database is being provided",
        "00001 03 n 03 archive 0 tarball 0 depository_library 0 000 | a collection",
        "00002 03 n 02 colleague 0 coworker 0 000 | a fellow worker",
    ],
    "verb": ["00003 36 v 02 search 0 look 0 000 | try to locate"],
    "adj": ["00004 00 s 02 newest(a) 0 latest 0 000 | most recent"],
    "adv": [],
}


@pytest.fixture
def wordnet(tmp_path: Path) -> Path:
    for pos, lines in DATA.items():
        (tmp_path / f"data.{pos}").write_text("\n".join(lines) + "\n", encoding="latin-1")
    thesaurus.synonyms.cache_clear()
    return tmp_path


def test_synonyms_share_a_synset_are_folded_and_skip_multiword_lemmas(wordnet: Path) -> None:
    table = thesaurus.synonyms(wordnet)
    assert table is not None
    # folded like the index's terms ("archive" -> "archiv"); "depository_library" is two
    # words: dropped
    assert table["archiv"] == {"tarball"} and table["tarball"] == {"archiv"}
    assert table["search"] == {"look"} and table["look"] == {"search"}
    assert table["newest"] == {"latest"}  # the "(a)" marker is not part of the word
    assert "depository_library" not in table and "library" not in table


def test_a_missing_wordnet_is_reported_as_none(tmp_path: Path) -> None:
    thesaurus.synonyms.cache_clear()
    assert thesaurus.synonyms(tmp_path) is None


def test_expansion_adds_only_synonyms_the_index_knows_at_a_lower_weight(wordnet: Path) -> None:
    table = thesaurus.synonyms(wordnet)
    assert table is not None
    vocabulary = {"tarball": 0, "search": 1, "look": 2, "latest": 3}
    query = plain_query("look for the newest archive")
    grown = thesaurus.expanded(query, table, vocabulary, 0.4, absent_only=False)
    # look -> search (known), newest -> latest, archiv -> tarball; each at 0.4 x 1.
    assert grown.weights == {"look": 1.0, "newest": 1.0, "archiv": 1.0,
                             "search": 0.4, "latest": 0.4, "tarball": 0.4}  # fmt: skip
    absent = thesaurus.expanded(query, table, vocabulary, 0.4, absent_only=True)
    # "look" is in the index: only the absent "newest" and "archiv" are bridged.
    assert absent.weights == {"look": 1.0, "newest": 1.0, "archiv": 1.0,
                              "latest": 0.4, "tarball": 0.4}  # fmt: skip
    assert grown.text == query.text and grown.own_terms == query.own_terms
