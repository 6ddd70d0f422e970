"""HashingEmbedder: the OFFLINE STAND-IN for a real embedding model (numpy only).

It is not a semantic model. It maps text to a fixed-size vector by feature hashing
(the "hashing trick"): word unigrams, word bigrams and character 3-5-grams of each word
are hashed with CRC-32 into `dimensions` buckets with a hashed sign, weighted
1 + log(count), each family L2-normalised and mixed, and the result L2-normalised. Two
texts sharing words and word pieces ("firewall", "firewalls", "WAF") land close; two
texts sharing only meaning do not. That is enough to run, test and benchmark the whole
pipeline offline and deterministically; on AWS the Titan embedder replaces it.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise

import numpy as np

from ..text.tokens import terms

# Family weights: whole words matter most; bigrams add phrase order; char n-grams give
# partial credit for shared word pieces (plural forms, compounds, typos).
_WEIGHTS = {"w": 0.65, "b": 0.35, "c": 0.45}
_NGRAMS = (3, 4, 5)


class HashingEmbedder:
    """Deterministic feature-hashing embedder; `id` changes whenever the output would."""

    id = "hashing-v2"  # v2: terms fold verb endings (tokens.TERMS_VERSION 2)

    def __init__(self, dimensions: int = 1024) -> None:
        if dimensions < 16:
            raise ValueError("HashingEmbedder needs at least 16 dimensions")
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """n x dimensions float32, each row L2-normalised (a zero row for empty text)."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def _vector(self, text: str) -> np.ndarray:
        tokens = terms(text)
        families = {
            "w": Counter(tokens),
            "b": Counter(f"{a} {b}" for a, b in pairwise(tokens)),
            "c": Counter(_char_ngrams(tokens)),
        }
        total = np.zeros(self.dimensions, dtype=np.float64)
        for family, counts in families.items():
            part = self._hashed(family, counts)
            norm = float(np.linalg.norm(part))
            if norm > 0.0:
                total += _WEIGHTS[family] * part / norm
        norm = float(np.linalg.norm(total))
        return (total / norm if norm > 0.0 else total).astype(np.float32)

    def _hashed(self, family: str, counts: Counter[str]) -> np.ndarray:
        if not counts:
            return np.zeros(self.dimensions, dtype=np.float64)
        hashes = np.array(
            [zlib.crc32(f"{family}:{feature}".encode()) for feature in counts], dtype=np.uint64
        )
        weights = 1.0 + np.log(np.array(list(counts.values()), dtype=np.float64))
        # One hash gives both the bucket (low bits) and the sign (bit 31), so collisions
        # cancel out on average instead of piling up.
        signs = np.where((hashes >> np.uint64(31)) & np.uint64(1), -1.0, 1.0)
        buckets = (hashes % np.uint64(self.dimensions)).astype(np.intp)
        return np.bincount(buckets, weights=weights * signs, minlength=self.dimensions)


def _char_ngrams(tokens: Iterable[str]) -> Iterable[str]:
    for token in tokens:
        padded = f"<{token}>"
        for n in _NGRAMS:
            for start in range(max(len(padded) - n + 1, 0)):
                yield padded[start : start + n]
