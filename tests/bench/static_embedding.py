"""A real static embedding model beside the hashing stand-in, for `make bench-retrieval`.

WordLlama (MIT, on PyPI as `wordllama`) ships token embeddings distilled from large
language models' input layers: its wheel bundles `l2_supercat_256.safetensors` (a
vocabulary x 256 float matrix) and the Hugging Face tokenizers configuration that goes
with it. A text's vector is the mean of its tokens' rows, L2-normalised: no network, no
model runtime, a lookup and a mean on the CPU. It is an offline embedder written by
others, not Titan: the benchmark asks whether it closes the vocabulary gap that no
lexical trick closed ("publish" vs "release to the registry").

Only the two bundled files are read (with `safetensors` and `tokenizers`, wordllama's own
dependencies); wordllama's loader is not used because it looks for the tokenizer online.
"""

from __future__ import annotations

import copy
import importlib.util
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from steps.lib.grounding import retrieval
from steps.lib.grounding.followup import Query
from steps.lib.grounding.knowledge import Knowledge
from steps.lib.grounding.retrieval import LEXICAL_WEIGHT, cosines, lexical_scores
from steps.lib.providers.hashing_embedder import HashingEmbedder
from tests.bench import quality

WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
TENSOR = "embedding.weight"


def package_dir() -> Path | None:
    """Where the installed wordllama package lives (None: not installed)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


class StaticEmbedder:
    """Mean of WordLlama's token rows, L2-normalised (a zero row for a text with no token)."""

    id = "static-wordllama-l2-256"
    token_weight: np.ndarray | None = None  # per token id; None: a plain mean

    def __init__(self, package: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.weights_path = package / WEIGHTS
        self.tokenizer_path = package / TOKENIZER
        self.table = np.ascontiguousarray(load_file(str(self.weights_path))[TENSOR], np.float32)
        self.dimensions = int(self.table.shape[1])
        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            # One text at a time on the calling thread: encode_batch would spread a batch
            # over a thread pool, which the benchmark's thread CPU time would not see.
            encoding = self.tokenizer.encode(text, add_special_tokens=False)
            ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, self.table.shape[0] - 1)
            if ids.size == 0:
                continue
            rows = self.table[ids]
            if self.token_weight is not None:
                rows = rows * self.token_weight[ids, None]
            mean = rows.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0.0:
                out[row] = mean / norm
        return out


SIF_A = 1e-3  # the smooth inverse frequency's a, the value its paper recommends


def with_sif(base: StaticEmbedder, corpus: Sequence[str]) -> StaticEmbedder:
    """The same model with each token row weighted a / (a + p(token)), p counted over
    `corpus` (the index's own chunks): the usual remedy for a mean dominated by frequent
    tokens ("the", "to", "a"), measured as a variant."""
    counts = np.zeros(base.table.shape[0], dtype=np.float64)
    for text in corpus:
        ids = base.tokenizer.encode(text, add_special_tokens=False).ids
        np.add.at(counts, np.clip(np.asarray(ids, dtype=np.int64), 0, counts.shape[0] - 1), 1)
    variant = copy.copy(base)
    variant.id = f"{base.id}-sif"
    variant.token_weight = (SIF_A / (SIF_A + counts / max(counts.sum(), 1.0))).astype(np.float32)
    return variant


def load() -> StaticEmbedder | None:
    """The embedder, or None when wordllama is not installed (the bench says so)."""
    package = package_dir()
    return StaticEmbedder(package) if package is not None else None


def installed_bytes(package: Path) -> dict[str, int]:
    """Bytes a runtime would carry: the two model files and the two packages that read them."""

    def tree(name: str) -> int:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return 0
        return sum(p.stat().st_size for p in Path(spec.origin).parent.rglob("*") if p.is_file())

    return {
        "weights": (package / WEIGHTS).stat().st_size,
        "tokenizer": (package / TOKENIZER).stat().st_size,
        "tokenizers package": tree("tokenizers"),
        "safetensors package": tree("safetensors"),
    }


# --- the measurements ------------------------------------------------------------------

WEIGHTS_SWEPT = (0.1, 0.2, 0.3, 0.5, 1.0)  # of the lexical part beside the static cosine


def static_report(
    kb: Knowledge,
    kb_static: Knowledge,
    qs: quality.QuestionSet,
    hashing: HashingEmbedder,
    embedder: StaticEmbedder,
) -> dict[str, Any]:
    """Every static-cosine ranking of one set, on the same chunks as the hashing index.

    For each weight of the lexical part: the hybrid's hit@1/hit@5/MRR, the degraded
    answer's right-page rate when the lexical ranking is fused with the static cosine
    (one query embedding on the CPU, no Bedrock call), and the chain rate (the hybrid run
    turn by turn, as S4 Retrieve runs it, with this weight).
    """
    if [c.id for c in kb.chunks] != [c.id for c in kb_static.chunks]:
        raise SystemExit("the static index holds other chunks than the hashing one")
    cache: dict[str, np.ndarray] = {}

    def vector(query: Query) -> np.ndarray:
        if query.text not in cache:
            cache[query.text] = embedder.embed([query.text])[0]
        return cache[query.text]

    def cosine(query: Query) -> np.ndarray:
        return cosines(kb_static.matrix, vector(query))

    def fused(weight: float) -> quality.Scorer:
        return lambda _kb, _v, q: cosine(q) + np.float32(weight) * lexical_scores(kb, q)

    def degraded(weight: float) -> quality.DegradedPick:
        # Like the degraded answer: nothing for a message without a content term.
        def pick(_kb: Knowledge, q: Query) -> str | None:
            return quality.best_page(kb, fused(weight)(kb, np.zeros(0), q)) if q.own_terms else None

        return pick

    table: dict[str, quality.Scorer] = {
        "cosine": lambda _kb, _v, q: cosine(q),
        "both": lambda _kb, v, q: (
            cosines(kb.matrix, v) + cosine(q) + np.float32(LEXICAL_WEIGHT) * lexical_scores(kb, q)
        ),
    }
    table.update({f"{w}": fused(w) for w in WEIGHTS_SWEPT})
    found = quality.evaluate(kb, qs, hashing, table)
    by_weight = {}
    for w in WEIGHTS_SWEPT:
        with mock.patch.object(retrieval, "LEXICAL_WEIGHT", w):  # what scores() reads
            chains = quality.chain_rate(kb_static, qs, embedder)
        by_weight[w] = {
            "hybrid": found[f"{w}"],
            "degraded": quality.degraded_rate(kb, qs, degraded(w)),
            "chains": chains,
        }
    return {"cosine": found["cosine"], "both": found["both"], "by_weight": by_weight}


def chosen_weight(margins: Sequence[dict[float, float]]) -> float:
    """The lexical weight whose worse margin over BM25 across the sets is largest (both
    sets choose it: no set's best at another's expense)."""
    return max(WEIGHTS_SWEPT, key=lambda w: (min(m[w] for m in margins), -abs(w - LEXICAL_WEIGHT)))


def timings(
    hashing: HashingEmbedder, embedder: StaticEmbedder, texts: Sequence[str], rounds: int = 5
) -> dict[str, float]:
    """Median CPU ms to embed one query (hashing and static interleaved, query by query)."""
    cpu: dict[str, list[int]] = {"hashing": [], "static": []}
    runs = {"hashing": hashing.embed, "static": embedder.embed}
    for run in runs.values():
        run([texts[0]])  # warm lazy imports out of the measurement
    for _ in range(rounds):
        for text in texts:
            for name, run in runs.items():
                start = time.thread_time_ns()
                run([text])
                cpu[name].append(time.thread_time_ns() - start)
    return {name: statistics.median(values) / 1e6 for name, values in cpu.items()}


def load_ms(package: Path, rounds: int = 5) -> float:
    """Median CPU ms to read the weights and the tokenizer (a cold start would pay it)."""
    values = []
    for _ in range(rounds):
        start = time.thread_time_ns()
        StaticEmbedder(package)
        values.append(time.thread_time_ns() - start)
    return statistics.median(values) / 1e6


# --- the report ------------------------------------------------------------------------

NAME = "WordLlama l2_supercat 256"


def rows(found: dict[str, Any], weight: float) -> dict[str, quality.Scores]:
    """The static rows of a set's ranking table, at the weight both sets chose."""
    return {
        f"static cosine only ({NAME}, mean of token rows)": found["cosine"],
        f"static hybrid: static cosine + {weight} x lexical part": found["by_weight"][weight][
            "hybrid"
        ],
        f"both cosines (hashing + static) + {LEXICAL_WEIGHT} x lexical part": found["both"],
    }


def lines(found: dict[str, Any], bm25_mrr: float, weight: float) -> list[str]:
    """The static bullets of one set: targets at the chosen weight, then the sweep."""
    at = found["by_weight"][weight]
    margin = at["hybrid"].mrr - bm25_mrr
    sweep = "; ".join(
        f"{w}: MRR {r['hybrid'].mrr:.3f} ({r['hybrid'].mrr - bm25_mrr:+.3f}), degraded "
        f"{r['degraded']:.2f}, chains {r['chains']:.2f}"
        for w, r in found["by_weight"].items()
    )
    return [
        f"- with the static embedder ({NAME}) at lexical weight {weight}: hybrid MRR - BM25 "
        f"MRR {margin:+.4f} (target >= +0.05: {'met' if margin >= 0.05 else 'NOT met'}); "
        f"degraded with static cosine (the degraded answer's lexical ranking + the static "
        f"cosine: one query embedding on the CPU, no Bedrock call) {at['degraded']:.2f} "
        f"(target >= 0.60: {'met' if at['degraded'] >= 0.60 else 'NOT met'}); chains "
        f"{at['chains']:.2f} (target >= 0.80: {'met' if at['chains'] >= 0.80 else 'NOT met'})",
        f"- static embedder, by weight of the lexical part beside its cosine: {sweep}",
    ]


def costs(
    sizes: dict[str, int],
    query_ms: dict[str, float],
    build_ms: dict[str, dict[str, Any]],
    load: float,
    weight: float,
) -> str:
    """What the static embedder costs, and how its weight was chosen."""
    builds = "; ".join(
        f"{where}: {t['hashing'][0]:,.0f} ms hashing vs {t['static'][0]:,.0f} ms static"
        for where, t in build_ms.items()
    )
    return (
        f"**Static embedder** ({NAME}, `wordllama` {_version()}, MIT: a 32,000 x 256 table "
        "of token vectors distilled from large language models' input layers; a text is the "
        "mean of its tokens' rows, L2-normalised; an offline embedder written by others, not "
        "Titan; the bench reads the two bundled files with `safetensors` and `tokenizers`). "
        f"Weight of the lexical part beside it: {weight}, chosen as the weight whose worse "
        f"margin over BM25 across the two sets is largest (swept: "
        f"{', '.join(map(str, WEIGHTS_SWEPT))}). What it would add to a package: weights "
        f"{sizes['weights']:,} bytes + tokenizer {sizes['tokenizer']:,} bytes + the "
        f"`tokenizers` package {sizes['tokenizers package']:,} bytes + `safetensors` "
        f"{sizes['safetensors package']:,} bytes = "
        f"{sum(sizes.values()) / 1e6:.1f} MB. One query embedded: {query_ms['static']:.3f} ms "
        f"CPU (median over both sets' questions; hashing {query_ms['hashing']:.3f} ms). "
        f"Reading the weights and tokenizer: {load:.0f} ms CPU (median of 5; a cold start "
        f"pays it once). Whole index build, `build()` median CPU of 3, interleaved: {builds}."
    )


def _version() -> str:
    from importlib.metadata import version

    return version("wordllama")


def verdict(found: dict[str, dict[str, Any]], bm25: dict[str, float], weight: float) -> str:
    """Which of the three targets the static hybrid misses, per set, at the chosen weight."""
    missed = []
    for where, result in found.items():
        at = result["by_weight"][weight]
        margin = at["hybrid"].mrr - bm25[where]
        if margin < 0.05:
            missed.append(f"{where} MRR margin {margin:+.4f}")
        if at["degraded"] < 0.60:
            missed.append(f"{where} degraded {at['degraded']:.2f}")
        if at["chains"] < 0.80:
            missed.append(f"{where} chains {at['chains']:.2f}")
    if not missed:
        return "With it, every target is met on both sets."
    return f"With it, targets still missed: {'; '.join(missed)}."


def sif_line(found: dict[str, Any], bm25_mrr: float, weight: float) -> str:
    at = found["by_weight"][weight]
    return (
        f"- tried, not chosen: the static embedder with smooth-inverse-frequency token "
        f"weights (a / (a + p), a = {SIF_A}, p counted over this index's chunks), at lexical "
        f"weight {weight}: cosine only MRR {found['cosine'].mrr:.3f}, hybrid MRR "
        f"{at['hybrid'].mrr:.3f} ({at['hybrid'].mrr - bm25_mrr:+.3f} over BM25), degraded "
        f"{at['degraded']:.2f}, chains {at['chains']:.2f}"
    )
