"""WordNet synonyms as a vocabulary bridge, MEASURED by `make bench-retrieval` (not used by
the runtime: it did not help, docs/benchmarks.md).

Princeton WordNet 3.0 from Debian's `wordnet-base` (files under /usr/share/wordnet): two
words are synonyms when they share a synset (one-word lemmas only, stop words dropped),
each folded by `tokens.terms` like the index's terms. A query term gets the synonyms
that the index's vocabulary holds, at a lower weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path

from steps.lib.grounding.followup import Query
from steps.lib.text.tokens import STOPWORDS, fold

WORDNET = Path("/usr/share/wordnet")
PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")


@cache
def synonyms(root: Path = WORDNET) -> dict[str, frozenset[str]] | None:
    """Folded word -> its folded synonyms; None when WordNet's data files are missing."""
    if not all((root / f"data.{pos}").is_file() for pos in PARTS_OF_SPEECH):
        return None
    found: dict[str, set[str]] = {}
    for pos in PARTS_OF_SPEECH:
        for line in (root / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if not line.strip() or line.startswith(" "):  # blank, or the licence header
                continue
            fields = line.split()
            count = int(fields[3], 16)
            lemmas = (w.split("(")[0].lower() for w in fields[4 : 4 + 2 * count : 2])
            folded = {fold(w) for w in lemmas if w.isalpha() and w not in STOPWORDS}
            for word in folded:
                found.setdefault(word, set()).update(folded - {word})
    return {word: frozenset(others) for word, others in found.items()}


def expanded(
    query: Query,
    table: Mapping[str, frozenset[str]],
    vocabulary: Mapping[str, int],
    weight: float,
    *,
    absent_only: bool,
) -> Query:
    """`query` plus the synonyms of its terms that the index knows, each at `weight` x the
    weight of the term it came from (the query's own terms keep theirs)."""
    extra: dict[str, float] = {}
    for term, term_weight in query.weights.items():
        if absent_only and term in vocabulary:
            continue
        for synonym in table.get(term, ()):
            if synonym in vocabulary and synonym not in query.weights:
                extra[synonym] = max(extra.get(synonym, 0.0), term_weight * weight)
    return replace(query, weights={**query.weights, **extra})
