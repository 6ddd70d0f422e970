"""The benchmark's static embedder reads WordLlama's bundled files as WordLlama does.

`make bench-retrieval` measures WordLlama beside the hashing stand-in with its own
reader of the two bundled files (wordllama's loader looks for the tokenizer online);
its figures mean something only if that reader computes what the library computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from steps.lib.providers.hashing_embedder import HashingEmbedder
from tests.bench import static_embedding

TEXTS = [
    "How do I publish a package?",
    "Release my module to the registry",
    "the weather is cold today",
    "npm install --save-dev typescript",
]


@pytest.fixture(scope="module")
def embedder() -> static_embedding.StaticEmbedder:
    found = static_embedding.load()
    assert found is not None, "wordllama is a dev dependency: reinstall with `make venv`"
    return found


def test_it_computes_what_wordllama_computes(embedder: static_embedding.StaticEmbedder) -> None:
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    # Its own tokenizer instance: WordLlamaInference turns padding on for the batch.
    tokenizer = Tokenizer.from_file(str(embedder.tokenizer_path))
    reference = WordLlamaInference(embedder.table, tokenizer)
    expected = reference.embed(TEXTS, norm=True)
    np.testing.assert_allclose(embedder.embed(TEXTS), expected, atol=1e-6)


def test_rows_are_unit_length_deterministic_and_zero_for_no_token(
    embedder: static_embedding.StaticEmbedder,
) -> None:
    first, second = embedder.embed([*TEXTS, ""]), embedder.embed([*TEXTS, ""])
    assert first.shape == (5, embedder.dimensions) == (5, 256)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(np.linalg.norm(first[:4], axis=1), 1.0, atol=1e-6)
    assert not first[4].any()


def test_it_ranks_a_paraphrase_above_a_sentence_sharing_words_the_hashing_one_does_not(
    embedder: static_embedding.StaticEmbedder,
) -> None:
    question = "How do I remove a package I no longer need?"
    paraphrase = "Uninstalling a dependency deletes it from node_modules."
    unrelated = "How do I publish a package I wrote?"

    def prefers_paraphrase(vectors: np.ndarray) -> bool:
        return bool(vectors[0] @ vectors[1] > vectors[0] @ vectors[2])

    assert prefers_paraphrase(embedder.embed([question, paraphrase, unrelated]))
    assert not prefers_paraphrase(HashingEmbedder(1024).embed([question, paraphrase, unrelated]))


def test_the_weight_is_the_one_whose_worse_margin_is_largest() -> None:
    weights = static_embedding.WEIGHTS_SWEPT
    # Set A prefers the smallest weight, set B the largest; the middle loses least on both.
    a = {w: 0.10 - 0.1 * i for i, w in enumerate(weights)}
    b = {w: 0.10 - 0.1 * (len(weights) - 1 - i) for i, w in enumerate(weights)}
    assert static_embedding.chosen_weight([a, b]) == weights[len(weights) // 2]
    assert static_embedding.chosen_weight([a]) == weights[0]


def test_sif_weights_frequent_tokens_down_and_leaves_the_base_alone(
    embedder: static_embedding.StaticEmbedder,
) -> None:
    corpus = ["the registry and the package and the scope"] * 20 + ["publish"]
    sif = static_embedding.with_sif(embedder, corpus)
    assert embedder.token_weight is None and sif.id.endswith("-sif")
    ids = {
        t: embedder.tokenizer.encode(t, add_special_tokens=False).ids[0] for t in ("the", "publish")
    }
    assert sif.token_weight is not None
    assert sif.token_weight[ids["the"]] < sif.token_weight[ids["publish"]] < 1.0
    text = ["the publish"]
    assert not np.allclose(sif.embed(text), embedder.embed(text))
    np.testing.assert_allclose(np.linalg.norm(sif.embed(text), axis=1), 1.0, atol=1e-6)
