"""Indexing speed with the local embedder, for `make bench-index`: a real docs tree written
by others (Node.js's API reference, about 3.2 MB of Markdown) built cold and rebuilt after
a one-page edit; the previous batching beside the current one on npm's docs (same cut,
same vectors within 1e-4); and what the cut at 128 word pieces costs in retrieval
quality against 256 on both question sets. Rewrites only the `index` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.build import build
from indexer.local_model import CachedLocalEmbedder
from steps.lib.grounding.knowledge import Knowledge, load_knowledge
from steps.lib.grounding.retrieval import LOCAL_LEXICAL_WEIGHT, scores
from steps.lib.providers import local_embedder
from steps.lib.providers.local_embedder import (
    DIMENSIONS,
    MAX_TOKENS,
    LocalEmbedder,
    default_threads,
    weights_file,
)
from tests.bench import corpora, quality, report
from tests.bench.local_model import NPM_QUESTIONS, QUESTIONS, SITE
from tests.bench.retrieval import POLICY

CUTS = (256, 128)


class PreviousEmbedder(LocalEmbedder):
    """The embedder as it was before this bench: texts sorted by characters, 32 per call
    padded to the longest, one session on `threads` intra-op threads, cut at 256."""

    def __init__(self, threads: int) -> None:
        import onnxruntime

        super().__init__(max_tokens=256)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(4, threads)
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(weights_file()), options, providers=["CPUExecutionProvider"]
        )

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], Any] | None = None
    ) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), 32):
            rows = order[start : start + 32]
            out[rows] = self._batch(self._tokenizer.encode_batch([texts[i] for i in rows]))
        return out


def timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """`run()`'s result with the process CPU seconds (every thread) and wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = run()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def site_bytes(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def cold_and_edited(site: Path, work: Path, threads: int) -> dict[str, Any]:
    """A cold build (empty cache) of `site`, then one page edited and the site rebuilt
    with the cache the first build left (the model's load counted in both)."""
    out, cache = work / "node-index", work / "node-cache.json"

    def embedder() -> CachedLocalEmbedder:
        return CachedLocalEmbedder(lambda: LocalEmbedder(threads=threads), cache_path=cache)

    first = embedder()
    report_, cpu, wall = timed(lambda: build(site, out, POLICY, first))
    page = sorted(site.glob("*.md"))[0]
    page.write_text(page.read_text(encoding="utf-8") + "\nOne sentence added.\n", "utf-8")
    second = embedder()
    _, edit_cpu, edit_wall = timed(lambda: build(site, out, POLICY, second))
    kb = load_knowledge(out)
    return {
        "pages": len(kb.pages),
        "chunks": len(kb.chunks),
        "cold": (first.embedded, cpu, wall),
        "edited": (second.embedded, edit_cpu, edit_wall),
        "report": report_,
    }


def npm_builds(site: Path, work: Path, threads: int) -> dict[str, tuple[Knowledge, float, float]]:
    """npm's docs built by the previous embedder and by the current one at each cut."""
    embedders: dict[str, LocalEmbedder] = {"previous": PreviousEmbedder(threads)}
    embedders |= {f"cut {cut}": LocalEmbedder(threads=threads, max_tokens=cut) for cut in CUTS}
    builds = {}
    for name, embedder in embedders.items():
        out = work / f"npm-{name.replace(' ', '')}"
        _, cpu, wall = timed(lambda e=embedder, o=out: build(site, o, POLICY, e))
        builds[name] = (load_knowledge(out), cpu, wall)
    return builds


def quality_by_cut(
    indexes: dict[str, tuple[dict[int, Knowledge], Path]],
) -> dict[str, dict[int, Any]]:
    """Page MRR of the hybrid (the served ranking) and of the cosine alone, at each cut."""
    table = {"hybrid": scores, "cosine": quality.weighted(0.0)}
    result: dict[str, dict[int, Any]] = {}
    for title, (by_cut, questions) in indexes.items():
        qs = quality.load_set(questions)
        result[title] = {
            cut: quality.evaluate(kb, qs, LocalEmbedder(max_tokens=cut), table)  # type: ignore[arg-type]
            for cut, kb in by_cut.items()
        }
    return result


def sample_indexes(work: Path, threads: int) -> dict[int, Knowledge]:
    indexes = {}
    for cut in CUTS:
        out = work / f"sample-{cut}"
        build(SITE, out, POLICY, LocalEmbedder(threads=threads, max_tokens=cut))
        indexes[cut] = load_knowledge(out)
    return indexes


def query_ms(texts: list[str]) -> dict[int, float]:
    """Median CPU ms of one query's embedding (one text, one thread) at each cut."""
    medians = {}
    for cut in CUTS:
        model = LocalEmbedder(max_tokens=cut)
        model.embed(texts[:3])
        runs = [timed(lambda m=model, t=text: m.embed([t]))[1] for text in texts]
        medians[cut] = statistics.median(runs) * 1e3
    return medians


def same_vectors(builds: dict[str, tuple[Knowledge, float, float]]) -> float:
    """Largest difference between the previous batching's vectors and the current one's
    at the same cut (256): the speed-up alone must not move them."""
    return float(np.abs(builds["previous"][0].matrix - builds["cut 256"][0].matrix).max())


def measure(work: Path) -> str:
    threads = default_threads()
    load_before = load()
    node = corpora.node_api_docs(work / "node-api")
    npm = corpora.npm_docs(work / "npm-docs")
    node_bytes = site_bytes(node.site)
    npm_bytes = site_bytes(npm.site)
    node_run = cold_and_edited(node.site, work, threads)
    builds = npm_builds(npm.site, work, threads)
    npm_by_cut = {cut: builds[f"cut {cut}"][0] for cut in CUTS}
    scores = quality_by_cut(
        {
            "sample site": (sample_indexes(work, threads), QUESTIONS),
            "npm docs": (npm_by_cut, NPM_QUESTIONS),
        }
    )
    texts = [
        quality.question_query(q).text
        for path in (QUESTIONS, NPM_QUESTIONS)
        for q in quality.load_set(path).questions
    ]
    per_query = query_ms(texts)
    load_after = load()
    cold, edited = node_run["cold"], node_run["edited"]
    npm_chunks = len(builds["previous"][0].chunks)
    lines = [
        f"Measured by `make bench-index` ({os.cpu_count()} CPUs, shared with other work: load "
        f"average {load_before:.1f} before the run and {load_after:.1f} after), "
        f"{time.strftime('%Y-%m-%d')}. The local embedder ({local_embedder.MODEL_ID}: cut at "
        f"{MAX_TOKENS} word pieces, texts sorted by word pieces and batched up to "
        f"{local_embedder.TOKENS_PER_BATCH} padded word pieces a call, {threads} one-thread "
        "sessions in parallel). CPU is the process's (every thread), wall is elapsed; both "
        "include reading, chunking, the model's load and writing the index.",
        "",
        f"**A real docs tree**: Node.js's API reference (Debian's nodejs-doc {node.version}, "
        f"MIT; copied at bench time, never committed): {node_bytes:,} bytes of Markdown "
        f"({node_bytes / 1e6:.2f} MB), {node_run['pages']} pages, {node_run['chunks']} chunks.",
        "",
        "| build | chunks embedded | CPU s | wall s |",
        "|---|---:|---:|---:|",
        f"| cold (empty cache) | {cold[0]} | {cold[1]:.1f} | {cold[2]:.1f} |",
        f"| after editing one page (cache kept) | {edited[0]} | {edited[1]:.1f} | "
        f"{edited[2]:.1f} |",
        "",
        f"**Before and after the speed-ups** on npm's docs (npm {npm.version}, "
        f"{npm_bytes:,} bytes, {npm_chunks} chunks), cold builds:",
        "",
        "| embedder | CPU s | wall s |",
        "|---|---:|---:|",
        f"| previous: sorted by characters, 32 a call, one session on {min(4, threads)} "
        f"intra-op threads, cut 256 | {builds['previous'][1]:.1f} | {builds['previous'][2]:.1f} |",
        *(
            f"| current batching, cut {cut} | {builds[f'cut {cut}'][1]:.1f} | "
            f"{builds[f'cut {cut}'][2]:.1f} |"
            for cut in CUTS
        ),
        "",
        f"The batching alone moves no vector by more than {same_vectors(builds):.2g} "
        "(previous vs current at cut 256, same chunks).",
        "",
        "**The cut against retrieval quality** (page MRR, hit@1; hybrid = the served ranking, "
        f"retrieval.scores: cosine + {LOCAL_LEXICAL_WEIGHT} x the lexical part + the page parts):",
        "",
        "| set | cut | hybrid MRR | hybrid hit@1 | cosine MRR | cosine hit@1 |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {title} | {cut} | {s['hybrid'].mrr:.3f} | {s['hybrid'].hit1:.2f} | "
            f"{s['cosine'].mrr:.3f} | {s['cosine'].hit1:.2f} |"
            for title, by_cut in scores.items()
            for cut, s in by_cut.items()
        ),
        "",
        "One query's embedding (one text, one thread, median over "
        f"{len(texts)} questions): "
        + ", ".join(f"cut {cut} {ms:.1f} ms CPU" for cut, ms in per_query.items())
        + ".",
    ]
    return "\n".join(lines)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        body = measure(Path(tmp))
    print(body)
    report.write_section("index", "Indexing speed", body)


if __name__ == "__main__":
    main()
