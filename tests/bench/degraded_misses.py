"""Why the degraded answer (S7) misses a question, and the levers measured against it.

Part of `make bench-retrieval` (called by tests/bench/visitor_conditions.py on the same
indexes, written to docs/benchmarks.md's `bench:degraded` section), and a diagnosis on its
own: `python -m tests.bench.degraded_misses lmdb npm` prints, for every question whose
quoted section is not on the expected page, the expected page and the quoted section, and
the rank and score of both under each signal S7 ranks by (steps/lib/grounding/retrieval.py):
chunk BM25F, page BM25, their lexical sum, and beside the local model the cosine, the page
parts (page head and page best cosine) and the total.

The levers are the ones issue 28 named as suspects, each measured as S7 would rank (the
lexical part alone beside the hashing stand-in, S4's hybrid beside the local model):

- "also see" not following the quoted section's own links (S7 before they were recorded:
  the next pages by score sharing a term with the query);
- "also see" without its rule: the next distinct pages by score, whether or not they
  share a term with the query (the shipped rule keeps only pages that do);
- a page-level aggregate instead of one chunk: the page is picked by its best chunk +
  half its second best, or by the mean of its two best, then its best chunk is quoted;
- and one lever that is the indexer's, measured here because the misses point at it and
  measured only (indexer/ is not changed by this bench): the site indexed again with no
  section merged into its neighbour for being short (indexer/chunking.py merges sections
  under MIN_TOKENS, which puts each one-line Doxygen member under another member's
  heading), S7 as shipped on that index;
- and, on the Doxygen sites, the chunking before the indexer's Doxygen-aware rule
  (chunk_page's `member_sections`, shipped: a member's section is never merged and is
  headed by its name), with S4's page MRR beside it (a chunking change moves S4 too).
  Other generators' pages carry no member mark, so their index is the same with it
  (tests/indexer/test_doxygen_members.py).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from unittest import mock

import numpy as np

from indexer import chunking
from steps.lib.grounding import retrieval
from steps.lib.grounding.followup import Query
from steps.lib.grounding.knowledge import Knowledge
from tests.bench import quality

ALSO = retrieval.ALSO_PAGES
INTRO = (
    "Measured by `make bench-retrieval` (tests/bench/degraded_misses.py, on the indexes of "
    "`bench:visitor`): the degraded answer's two figures, the share of questions whose quoted "
    "section is on the expected page / whose expected page is that page or one of its two "
    '"also see" links, as shipped and under each lever issue 28 named as a suspect, '
    "ranked as S7 ranks (the lexical part alone beside the hashing stand-in, as a Titan "
    "deployment's S7 does with `degraded_embedder` none; S4's hybrid beside the local model, "
    "as S7 does in every deployment by default, Titan's included); then each question the "
    "local model's degraded answer quotes from another page."
)


class Run(Protocol):
    kb: Knowledge
    local: bool

    def vector(self, query: Query) -> np.ndarray: ...


def s7_total(kb: Knowledge, query: Query, vector: np.ndarray | None) -> np.ndarray:
    """What degraded_choice ranks by: the lexical part alone, or S4's hybrid score."""
    return (
        retrieval.lexical_scores(kb, query)
        if vector is None
        else retrieval.scores(kb, vector, query)
    )


def page_scores(kb: Knowledge, total: np.ndarray, second: float, mean: bool) -> np.ndarray:
    """Per page number: its best chunk's score + `second` x its second best (or, `mean`,
    the mean of the two; a one-chunk page counts its chunk alone)."""
    pages = int(kb.page_of.max()) + 1
    best = np.full(pages, -np.inf, dtype=np.float64)
    np.maximum.at(best, kb.page_of, total)
    rest = np.where(total == best[kb.page_of], -np.inf, total)  # drop each page's best
    runner = np.full(pages, -np.inf, dtype=np.float64)
    np.maximum.at(runner, kb.page_of, rest)
    runner = np.where(np.isfinite(runner), runner, best if mean else 0.0)
    out: np.ndarray = (best + runner) / 2 if mean else best + second * runner
    return out


def page_names(kb: Knowledge) -> list[str]:
    """Page paths by page number."""
    names: dict[int, str] = {}
    for index, number in enumerate(kb.page_of.tolist()):
        names.setdefault(number, kb.chunks[index].page)
    return [names[n] for n in range(len(names))]


Lever = Callable[[Knowledge, Query, "np.ndarray | None"], list[str]]


def shipped(kb: Knowledge, query: Query, vector: np.ndarray | None) -> list[str]:
    found = retrieval.degraded_choice(kb, query, query_vector=vector)
    return [found.chunk.page, *found.also] if found else []


def also_not_following_links(kb: Knowledge, query: Query, vector: np.ndarray | None) -> list[str]:
    """S7 as it was before "also see" followed the quoted section's links."""
    with mock.patch.object(retrieval, "FOLLOW_LINKS", False):
        return shipped(kb, query, vector)


def also_without_rule(kb: Knowledge, query: Query, vector: np.ndarray | None) -> list[str]:
    found = retrieval.degraded_choice(kb, query, query_vector=vector)
    if found is None:
        return []
    pages = [found.chunk.page]
    for index in retrieval.order(s7_total(kb, query, vector)).tolist():
        page = kb.chunks[index].page
        if page not in pages:
            pages.append(page)
        if len(pages) > ALSO:
            break
    return pages


def by_page_aggregate(second: float, mean: bool) -> Lever:
    def lever(kb: Knowledge, query: Query, vector: np.ndarray | None) -> list[str]:
        if retrieval.degraded_choice(kb, query, query_vector=vector) is None:
            return []
        ranked = np.argsort(-page_scores(kb, s7_total(kb, query, vector), second, mean))
        names = page_names(kb)
        return [names[n] for n in ranked[: ALSO + 1].tolist()]

    return lever


LEVERS: dict[str, Lever] = {
    "shipped (the best chunk's page; also see: the pages its section links to for a term "
    "of the question, then next pages sharing a term)": shipped,
    "also see not following the section's links (S7 before)": also_not_following_links,
    "also see: the next pages by score, no shared-term rule": also_without_rule,
    "page by its best chunk + 0.5 x its second best": by_page_aggregate(0.5, False),
    "page by the mean of its two best chunks": by_page_aggregate(0.0, True),
}


UNMERGED = (
    f"indexer: no short section merged (now under {chunking.MIN_TOKENS} tokens), S7 as shipped"
)


MEMBERS = "indexer: Doxygen member sections merged as before (not kept whole), S7 as shipped"


@contextmanager
def chunking_defaults(**values: object) -> Iterator[None]:
    """Index with chunk_page's keyword defaults set to `values` meanwhile."""
    defaults = chunking.chunk_page.__kwdefaults__
    assert defaults is not None and set(values) <= set(defaults)
    saved = dict(defaults)
    defaults.update(values)
    try:
        yield
    finally:
        defaults.update(saved)


def no_short_sections_merged() -> AbstractContextManager[None]:
    """Index with chunking's merge threshold at 0 (each heading its own chunk) meanwhile."""
    return chunking_defaults(min_tokens=0)


def doxygen_members_merged() -> AbstractContextManager[None]:
    """Index with Doxygen member sections merged like any short section meanwhile (the
    chunking before member sections were kept whole and alone)."""
    return chunking_defaults(member_sections=False)


def lever_rates(run: Run, qs: quality.QuestionSet) -> dict[str, tuple[float, float]]:
    """Per lever: (quoted page is the expected one, it or an "also see" link is)."""
    out: dict[str, tuple[float, float]] = {}
    for name, lever in LEVERS.items():
        quoted = linked = 0
        for q in qs.questions:
            query = quality.question_query(q)
            pages = lever(run.kb, query, run.vector(query) if run.local else None)
            quoted += pages[:1] == [q["page"]]
            linked += q["page"] in pages
        out[name] = (quoted / len(qs.questions), linked / len(qs.questions))
    return out


@dataclass(frozen=True, slots=True)
class Miss:
    question: str
    expected: str
    quoted: str  # "page :: heading trail" of the quoted section
    linked: bool  # the expected page is one of the "also see" links
    ranks: dict[str, tuple[int, int]]  # signal -> (expected page's rank, quoted page's)


def signals(kb: Knowledge, query: Query, vector: np.ndarray | None) -> dict[str, np.ndarray]:
    """Each per-chunk score S7 ranks by, under the names the bench prints."""
    out = {
        "chunk BM25": retrieval.normalised(retrieval.bm25_scores(kb, query)),
        "page BM25": retrieval.normalised(retrieval.page_bm25_scores(kb, query))[kb.page_of],
        "lexical": retrieval.lexical_scores(kb, query),
    }
    if vector is not None:
        cosine = retrieval.cosines(kb.matrix, np.asarray(vector, dtype=np.float32))
        out["cosine"] = cosine
        out["page parts"] = retrieval.page_parts(
            kb, cosine, retrieval.LOCAL_HEAD_WEIGHT, retrieval.LOCAL_PAGE_MAX_WEIGHT
        )
        out["total"] = retrieval.scores(kb, vector, query)
    return out


def page_rank(kb: Knowledge, score: np.ndarray, page: str) -> int:
    """1-based rank of `page` among pages ordered by their best chunk under `score`."""
    seen: list[str] = []
    for index in retrieval.order(score).tolist():
        found = kb.chunks[index].page
        if found not in seen:
            seen.append(found)
            if found == page:
                return len(seen)
    return len(seen) + 1


def misses(run: Run, qs: quality.QuestionSet) -> list[Miss]:
    out = []
    for q in qs.questions:
        query = quality.question_query(q)
        vector = run.vector(query) if run.local else None
        found = retrieval.degraded_choice(run.kb, query, query_vector=vector)
        if found is None or found.chunk.page == q["page"]:
            continue
        ranks = {
            name: (page_rank(run.kb, s, q["page"]), page_rank(run.kb, s, found.chunk.page))
            for name, s in signals(run.kb, query, vector).items()
        }
        heading = found.chunk.heading
        out.append(
            Miss(q["question"], q["page"], f"{found.chunk.page} :: {heading}",
                 q["page"] in found.also, ranks)
        )  # fmt: skip
    return out


def lever_table(rates: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """rates: run label -> lever -> (quoted, linked)."""
    labels = list(rates)
    return [
        "| lever | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
        *(
            f"| {lever} | "
            + " | ".join(f"{rates[label][lever][0]:.2f} / {rates[label][lever][1]:.2f}"
                         for label in labels) + " |"
            for lever in rates[labels[0]]
        ),
    ]  # fmt: skip


def miss_table(found: Sequence[Miss]) -> list[str]:
    if not found:
        return ["(no miss)"]
    names = list(found[0].ranks)
    return [
        "| question | expected page | quoted section | linked | "
        + " | ".join(f"{n} (exp./quoted)" for n in names) + " |",
        "|---|---|---|---|" + "---:|" * len(names),
        *(
            f"| {m.question} | `{m.expected}` | `{m.quoted[:80]}` | "
            f"{'yes' if m.linked else 'no'} | "
            + " | ".join(f"{m.ranks[n][0]} / {m.ranks[n][1]}" for n in names) + " |"
            for m in found
        ),
    ]  # fmt: skip


def main(keys: Sequence[str]) -> None:
    from tests.bench import visitor_conditions  # the sets and how they are indexed

    sites = [s for s in visitor_conditions.SITES if not keys or s.key in keys]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for site in sites:
            corpus = site.fetch(work / f"site-{site.key}")
            qs = quality.load_set(site.questions)
            for name, run in visitor_conditions.runs(corpus.site, work / site.key).items():
                print(f"\n## {site.key}, {name}\n")
                print("\n".join(lever_table({name: lever_rates(run, qs)})))
                print("\n" + "\n".join(miss_table(misses(run, qs))))


if __name__ == "__main__":
    main(sys.argv[1:])
