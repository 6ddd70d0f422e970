"""Questions asked from where the visitor stands, on real sites (part of `make bench-retrieval`).

The widget always sends the page the visitor is reading. Each question of a set is asked
as S4 Retrieve asks it (follow-up query with the page, hybrid rank, grounding selection,
the cited sources) under four conditions: no page, an unrelated long page (the corpus's
longest page; the next longest when that is the question's own), the site's home page, and
the page that answers. Page-level MRR = 1 / the position of the expected page among the
cited pages (0 when not cited). The worst condition's gap to "no page" is the figure the
issue's target bounds (<= 0.03 on every set).

Each site is indexed twice, by the hashing stand-in and by the local model (MiniLM, the
default embedder), and S4 ranks beside each as it would in a run. Measured for the chosen
policy (steps/lib/grounding/selection.py) and, on the same harness, for the policy it
replaced (the current page first, in page order, until the
budget is full) and for other current-page priors. The sets: Requests's docs (Sphinx),
MkDocs's docs (MkDocs), LMDB's C API and json-c's API (Doxygen), built HTML from Debian's
*-doc packages, and npm's docs (Markdown shipped in the npm package); questions written
from the pages before any was asked. The degraded answer (S7) is measured on the same
indexes: the quoted section's page, and that page or one of its two "also see" links. The
section replaces only `bench:visitor` in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from indexer.policy import IndexPolicy
from steps.lib.grounding import retrieval, selection
from steps.lib.grounding.followup import Query, follow_up_query
from steps.lib.grounding.knowledge import Knowledge, load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.providers.local_embedder import (
    MODEL_ID,
    LocalEmbedder,
    conversation_vector,
    default_threads,
)
from steps.lib.runtime.settings import Settings
from steps.retrieve import TOP_MATCHES, sources_of
from tests.bench import corpora, degraded_misses, quality, report

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EMBEDDER = HashingEmbedder(1024)
POLICY = replace(IndexPolicy.from_context(), permalinks="pretty")
CONDITIONS = ("no page", "unrelated long page", "home page", "the page itself")
TARGET_GAP = 0.03
TARGET_QUOTED, TARGET_LINKED = 0.70, 0.85
PRIORS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.15)


@dataclass(frozen=True, slots=True)
class RealSite:
    key: str
    generator: str
    fetch: Callable[[Path], corpora.Corpus]
    questions: Path


SITES = (
    RealSite(
        "requests",
        "Sphinx",
        lambda dest: corpora.debian_doc_site(
            "python-requests-doc", "usr/share/doc/python-requests-doc/html", dest,
            "Requests documentation (Debian python-requests-doc)",
        ),
        DATA / "requests_questions.json",
    ),
    RealSite(
        "mkdocs",
        "MkDocs",
        lambda dest: corpora.debian_doc_site(
            "mkdocs-doc", "usr/share/doc/mkdocs/html", dest,
            "MkDocs documentation (Debian mkdocs-doc)",
        ),
        DATA / "mkdocs_questions.json",
    ),
    RealSite(
        "lmdb",
        "Doxygen",
        lambda dest: corpora.debian_doc_site(
            "lmdb-doc", "usr/share/doc/lmdb-doc/html", dest,
            "LMDB C API documentation (Debian lmdb-doc)",
        ),
        DATA / "lmdb_questions.json",
    ),
    RealSite("npm", "Markdown (npm's docs/content)", corpora.npm_docs, DATA / "npm_questions.json"),
    # Added to check that issue 28's degraded-answer ranking changes generalise: a site of
    # its own (Doxygen file references and a Markdown README), its questions written and
    # committed before any change was measured on it.
    RealSite(
        "jsonc",
        "Doxygen",
        lambda dest: corpora.debian_doc_site(
            "libjson-c-doc", "usr/share/doc/libjson-c-dev/html", dest,
            "json-c API documentation (Debian libjson-c-doc)",
        ),
        DATA / "jsonc_questions.json",
    ),
)  # fmt: skip


def page_before(
    kb: Knowledge, ranked: Sequence[tuple[int, float]], page: str | None, budget: int
) -> tuple[list[int], list[int]]:
    """The policy this issue replaced, for comparison: the current page first, in page
    order, then the matches, greedily within the budget. (chosen, cited) as its S4 cited:
    the matches that fit, else everything chosen."""
    matches = [index for index, _ in ranked[:TOP_MATCHES]]
    chosen: dict[int, None] = {}
    used = 0
    for index in [*kb.page_chunks(page), *matches]:
        if index not in chosen and used + kb.chunks[index].tokens <= budget:
            chosen[index] = None
            used += kb.chunks[index].tokens
    leading = [index for index in matches if index in chosen]
    return list(chosen), leading or list(chosen)


def cited_pages(run: Run, question: str, page: str | None, before: bool, prior: float) -> list[str]:
    """The pages S4 cites for `question` asked from `page`, best first (retrieve.handler's
    steps); `before`: with the policy this issue replaced."""
    kb = run.kb
    query = follow_up_query(question, [], history_chars=quality.HISTORY_CHARS, page=page)
    vector = run.vector(query)
    budget = Settings().grounding_token_budget
    with mock.patch.object(retrieval, "CURRENT_PAGE_WEIGHT", prior):
        found = retrieval.ground(kb, vector, query, budget, TOP_MATCHES)
    cited = found.cited
    if before:
        cited = [kb.chunks[i] for i in page_before(kb, found.ranked, page, budget)[1]]
    return list(dict.fromkeys(source["page"] for source in sources_of(cited)))


def condition_pages(kb: Knowledge, expected: str) -> dict[str, str | None]:
    lengths = {page: sum(kb.chunks[i].tokens for i in idx) for page, idx in kb.pages.items()}
    longest = next(p for p in sorted(lengths, key=lambda p: -lengths[p]) if p != expected)
    home = "/" if "/" in kb.pages else min(kb.pages, key=len)
    return dict(zip(CONDITIONS, (None, longest, home, expected), strict=True))


def condition_mrr(
    run: Run, qs: quality.QuestionSet, before: bool, prior: float
) -> dict[str, float]:
    ranks: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    for q in qs.questions:
        for condition, page in condition_pages(run.kb, q["page"]).items():
            pages = cited_pages(run, q["question"], page, before, prior)
            ranks[condition].append(1 / (pages.index(q["page"]) + 1) if q["page"] in pages else 0.0)
    return {c: float(np.mean(r)) for c, r in ranks.items()}


def chain_conditions(run: Run, qs: quality.QuestionSet) -> dict[str, float]:
    """Share of the three-turn chains whose page S4 cites at turns 2 and 3 (vague
    follow-ups), each chain asked under each condition (its own page = "the page itself")."""
    kb, budget = run.kb, Settings().grounding_token_budget
    rates: dict[str, list[bool]] = {c: [] for c in CONDITIONS}
    for chain in qs.chains:
        for condition, page in condition_pages(kb, chain["page"]).items():
            history: list[dict[str, str]] = []
            held = True
            for turn, message in enumerate(chain["turns"]):
                query = follow_up_query(
                    message, history, history_chars=quality.HISTORY_CHARS, page=page
                )
                found = retrieval.ground(kb, run.vector(query), query, budget, TOP_MATCHES)
                cited = {s["page"] for s in sources_of(found.cited)}
                held = held and (turn == 0 or chain["page"] in cited)
                history += [
                    {"role": "user", "content": message},
                    {"role": "assistant", "content": ""},
                ]
            rates[condition].append(held)
    return {c: sum(r) / len(r) for c, r in rates.items()}


def worst_gap(mrr: dict[str, float]) -> float:
    return max(mrr["no page"] - mrr[c] for c in CONDITIONS[1:])


def about_page_rate(run: Run, pages: Sequence[str]) -> float:
    """Share of pages for which "Summarise this page" asked there cites that page first."""
    prior = retrieval.CURRENT_PAGE_WEIGHT
    hits = [cited_pages(run, "Summarise this page", p, False, prior)[:1] == [p] for p in pages]
    return sum(hits) / len(hits)


def degraded_rates(
    run: Run, qs: quality.QuestionSet, condition: str = "no page"
) -> tuple[float, float]:
    """(the quoted section's page is the expected one, it or one of its "also see" links
    is), over the set, each question asked from the condition's page as the widget sends
    it, as S7 ranks beside this run's index: S4's hybrid beside the local model's vectors
    (free), else the lexical part alone (a Titan deployment with `degraded_embedder` none:
    an embedding would be billed)."""
    quoted = linked = 0
    for q in qs.questions:
        page = condition_pages(run.kb, q["page"])[condition]
        query = replace(quality.question_query(q), page=page)
        vector = run.vector(query) if run.local else None
        found = retrieval.degraded_choice(run.kb, query, page=page, query_vector=vector)
        pages = [found.chunk.page, *found.also] if found else []
        quoted += pages[:1] == [q["page"]]
        linked += q["page"] in pages
    return quoted / len(qs.questions), linked / len(qs.questions)


def degraded_conditions(run: Run, qs: quality.QuestionSet) -> dict[str, tuple[float, float]]:
    """degraded_rates under each visitor condition."""
    return {c: degraded_rates(run, qs, c) for c in CONDITIONS}


def site_report(run: Run, qs: quality.QuestionSet) -> dict[str, Any]:
    chosen = retrieval.CURRENT_PAGE_WEIGHT
    variants: dict[str, dict[str, float]] = {
        f"chosen: matches first, the page within {selection.PAGE_SHARE:.0%} of the budget, "
        f"prior {chosen}": condition_mrr(run, qs, False, chosen),
        "before: the page first in page order, prior 0.15": condition_mrr(run, qs, True, 0.15),
    }  # fmt: skip
    for prior in PRIORS:
        if prior != chosen:
            variants[f"matches first, prior {prior}"] = condition_mrr(run, qs, False, prior)
    kb = run.kb
    long_pages = sorted(kb.pages, key=lambda p: -len(kb.pages[p]))[:10]
    return {
        "variants": variants,
        "about_page": about_page_rate(run, long_pages),
        "degraded": degraded_conditions(run, qs),
        # S7 of a Titan deployment as shipped: the local model's vectors the index
        # carries beside the billed embedder's (the hashing stand-in plays Titan's).
        "beside_titan": degraded_conditions(run.beside_titan, qs) if run.beside_titan else None,
        "chains": chain_conditions(run, qs) if qs.chains else None,
        "questions": len(qs.questions),
        "chains_n": qs.chains,
        "pages": len(kb.pages),
        "chunks": len(kb.chunks),
    }


def site_table(
    site: RealSite, corpus: corpora.Corpus, embedder: str, found: dict[str, Any]
) -> list[str]:
    chosen = next(iter(found["variants"].values()))
    gap = worst_gap(chosen)
    how = (
        "S4's hybrid with the local cosine: no billed call"
        if "local" in embedder
        else ("`degraded_embedder` none: lexical ranking, no embedding")
    )
    s7 = [(how, found["degraded"])]
    if found["beside_titan"]:
        s7.insert(0, (
            "beside a billed embedder, as a Titan deployment ships: the local model's "
            "vectors written into this index beside the stand-in's, S4's hybrid with the "
            "local cosine, no billed call",
            found["beside_titan"],
        ))  # fmt: skip
    return [
        f"**{corpus.name}, {corpus.version}**, {embedder} ({site.generator}; "
        f"{found['pages']} pages, {found['chunks']} chunks; `tests/data/{site.questions.name}`, "
        f"{found['questions']} questions):",
        "",
        "| policy | " + " | ".join(CONDITIONS) + " | worst gap |",
        "|---|" + "---:|" * (len(CONDITIONS) + 1),
        *(
            f"| {name} | " + " | ".join(f"{mrr[c]:.3f}" for c in CONDITIONS)
            + f" | {worst_gap(mrr):+.3f} |"
            for name, mrr in found["variants"].items()
        ),
        "",
        f"- chosen policy, worst gap to no page: {gap:.3f} (target <= {TARGET_GAP}: "
        f"{'met' if gap <= TARGET_GAP else 'NOT met'}); \"Summarise this page\" asked on each of "
        f"the 10 longest pages cites that page first: {found['about_page']:.2f}",
        *(
            [
                f"- its {len(found['chains_n'])} three-turn chains (vague follow-ups; "
                f"current-page prior {retrieval.FOLLOW_UP_PAGE_WEIGHT} after an earlier "
                "turn), the chain's page cited at turns 2 and 3: "
                + ", ".join(f"{c} {found['chains'][c]:.2f}" for c in CONDITIONS)
            ]
            if found["chains"]
            else []
        ),
        *(degraded_line(label, rates) for label, rates in s7),
    ]  # fmt: skip


def degraded_line(label: str, rates: dict[str, tuple[float, float]]) -> str:
    """One S7 figure line: each condition's quoted page / page or a link, and the targets
    judged on the worst condition."""
    quoted = min(q for q, _ in rates.values())
    linked = min(link for _, link in rates.values())
    each = "; ".join(f"{c} {q:.2f} / {link:.2f}" for c, (q, link) in rates.items())
    return (
        f"- degraded answer (S7, {label}), the quoted section's page is the expected one / "
        f'it or one of its two "also see" links, asked from each page: {each}; worst '
        f"{quoted:.2f} (target >= {TARGET_QUOTED}: "
        f"{'met' if quoted >= TARGET_QUOTED else 'NOT met'}) / {linked:.2f} (target >= "
        f"{TARGET_LINKED}: {'met' if linked >= TARGET_LINKED else 'NOT met'})"
    )


@dataclass
class Run:
    """One index of a site and the query embedding S4 would use beside it."""

    kb: Knowledge
    embed: Callable[[Query], np.ndarray]
    local: bool
    vectors: dict[tuple[str, tuple[str, ...]], np.ndarray] = field(default_factory=dict)
    # The same index read for S7 through its second matrix (the local model's), when it
    # carries one: what S7 ranks with beside a billed embedder.
    beside_titan: Run | None = None

    def vector(self, query: Query) -> np.ndarray:
        """The query's vector (the same message is embedded once for every condition)."""
        key = (query.text, query.earlier)
        if key not in self.vectors:
            self.vectors[key] = self.embed(query)
        return self.vectors[key]


def runs(site: Path, work: Path) -> dict[str, Run]:
    """The site indexed by the hashing stand-in (with the local model's vectors beside,
    as `chatguard index --embedder titan` writes them) and by the local model (the
    default); both builds share one cache of the local model's vectors."""
    model = LocalEmbedder(threads=default_threads())
    build(site, work / "hashing", POLICY, EMBEDDER, _cached(model, work))
    hashing = Run(load_knowledge(work / "hashing"), lambda q: EMBEDDER.embed([q.text])[0], False)
    hashing.beside_titan = _local(load_knowledge(work / "hashing", embedder=MODEL_ID), model)
    return {
        "hashing stand-in embedder": hashing,
        "local model (MiniLM, the default)": local_run(site, work, model),
    }


def local_run(site: Path, work: Path, model: LocalEmbedder) -> Run:
    """The site indexed by the local model into `work`/local, S4 ranking beside it."""
    build(site, work / "local", POLICY, _cached(model, work))
    return _local(load_knowledge(work / "local"), model)


def _cached(model: LocalEmbedder, work: Path) -> CachedLocalEmbedder:
    return CachedLocalEmbedder(lambda: model, cache_path=work / "local-cache.json")


def _local(kb: Knowledge, model: LocalEmbedder) -> Run:
    return Run(kb, lambda q: conversation_vector(model, q.message or q.text, q.earlier), True)


def member_sections_lever(
    site: RealSite,
    corpus: corpora.Corpus,
    qs: quality.QuestionSet,
    work: Path,
    levers: dict[str, dict[str, tuple[float, float]]],
    s4: dict[str, dict[str, float]],
) -> list[str]:
    """On a Doxygen site: S7 (a lever row) and S4's page MRR with member sections merged
    as before (degraded_misses.doxygen_members_merged), beside the shipped chunking."""
    if site.generator != "Doxygen":
        return []
    with degraded_misses.doxygen_members_merged():
        members = runs(corpus.site, work / f"members-{site.key}")
    lines = [
        "S4 page MRR (no page / unrelated long page / home page / the page itself; worst "
        "gap), Doxygen member sections merged as before -> kept whole (shipped):",
        "",
    ]
    for label, other in members.items():
        shipped = degraded_misses.lever_rates(other, qs)[next(iter(degraded_misses.LEVERS))]
        levers[label][degraded_misses.MEMBERS] = shipped
        mrr = condition_mrr(other, qs, False, retrieval.CURRENT_PAGE_WEIGHT)
        before, after = (
            " / ".join(f"{m[c]:.3f}" for c in CONDITIONS) + f"; {worst_gap(m):+.3f}"
            for m in (mrr, s4[label])  # merged as before -> shipped
        )
        lines.append(f"- {label}: {before} -> {after}")
    return [*lines, ""]


def measure(work: Path) -> tuple[str, str]:
    lines = [
        f"Measured by `make bench-retrieval` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} "
        "CPUs): page-level MRR of the pages S4 cites (retrieve.handler's steps: follow-up "
        "query with the page, hybrid rank, grounding selection within the default 1,500-token "
        "budget, sources), with the offline hashing embedder and with the local model; each "
        "question asked with no page, from the corpus's longest page (the next longest when "
        "that is its own), from the home page and from the page that answers. Worst gap = no "
        "page minus the worst condition. Each corpus is fetched at run time and never "
        "committed.",
        "",
    ]
    degraded = [degraded_misses.INTRO, ""]
    for site in SITES:
        corpus = site.fetch(work / f"site-{site.key}")
        qs = quality.load_set(site.questions)
        levers: dict[str, dict[str, tuple[float, float]]] = {}
        s4: dict[str, dict[str, float]] = {}
        for name, run in runs(corpus.site, work / f"index-{site.key}").items():
            missing = quality.missing_pages(run.kb, qs)
            if missing:
                raise SystemExit(f"{site.key}: expected pages missing from the index: {missing}")
            found = site_report(run, qs)
            lines += [*site_table(site, corpus, name, found), ""]
            levers[name] = degraded_misses.lever_rates(run, qs)
            s4[name] = next(iter(found["variants"].values()))
        with degraded_misses.no_short_sections_merged():
            unmerged = runs(corpus.site, work / f"unmerged-{site.key}")
        for label, other in unmerged.items():
            shipped = degraded_misses.lever_rates(other, qs)[next(iter(degraded_misses.LEVERS))]
            levers[label][degraded_misses.UNMERGED] = shipped
        member_lines = member_sections_lever(site, corpus, qs, work, levers, s4)
        # The misses beside the default embedder (the last run): what a visitor gets.
        degraded += [
            f"**{corpus.name}, {corpus.version}** ({site.generator}; "
            f"`tests/data/{site.questions.name}`), quoted page / page or a link:",
            "",
            *degraded_misses.lever_table(levers),
            "",
            *member_lines,
            f"Its misses beside the {name}: the page rank of the expected page and of the "
            "quoted section's page under each signal (1 = ranked first):",
            "",
            *degraded_misses.miss_table(degraded_misses.misses(run, qs)),
            "",
        ]
    return "\n".join(lines).rstrip(), "\n".join(degraded).rstrip()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        body, degraded = measure(Path(tmp))
    print(body)
    report.write_section("visitor", "Asked from where the visitor stands", body)
    report.write_section("degraded", "Why the degraded answer misses", degraded)


if __name__ == "__main__":
    main()
