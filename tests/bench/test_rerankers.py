"""The reranker bench's own checks: its second stage reorders only the pool and keeps it
above every other chunk, its pools are what they say, its adoption rule can refuse, and
S4 and S7 really rank through the stage while it is on (and not after)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from indexer.build import build
from steps.lib.grounding import retrieval
from steps.lib.grounding.knowledge import load_knowledge
from steps.lib.providers.hashing_embedder import HashingEmbedder
from tests.bench import rerankers as rr
from tests.bench.visitor_conditions import POLICY, SITES

FINITE = st.floats(-10, 10, allow_nan=False, width=32)


@st.composite
def ranked_case(draw):
    total = draw(arrays(np.float32, st.integers(1, 40), elements=FINITE))
    k = draw(st.integers(0, total.shape[0]))
    pool = retrieval.order(total, k)
    rerank = draw(arrays(np.float32, pool.shape[0], elements=FINITE))
    blend = draw(st.sampled_from([None, 0.2, 0.5, 1.0]))
    return total, pool, rerank, blend


@given(ranked_case())
def test_the_pool_moves_above_every_other_chunk_and_the_rest_keeps_its_scores(case):
    total, pool, rerank, blend = case
    out = rr.reordered(total, pool, rerank, blend)
    rest = np.setdiff1d(np.arange(total.shape[0]), pool)
    assert np.array_equal(out[rest], total[rest])
    if pool.size and rest.size:
        assert out[pool].min() > out[rest].max()


@given(ranked_case())
def test_alone_the_pool_follows_the_rerankers_order(case):
    total, pool, rerank, _ = case
    out = rr.reordered(total, pool, rerank, None)
    for a in range(pool.size):
        for b in range(pool.size):
            if rerank[a] > rerank[b]:
                assert out[pool[a]] > out[pool[b]]


def test_a_blend_weighs_both_scores_and_zero_keeps_the_first_pass():
    total = np.array([3.0, 2.0, 1.0, 0.0], np.float32)
    pool = np.array([0, 1, 2])
    rerank = np.array([0.0, 0.5, 1.0], np.float32)  # the reverse of the first pass
    kept = rr.reordered(total, pool, rerank, 0.0)
    assert list(retrieval.order(kept)) == [0, 1, 2, 3]
    flipped = rr.reordered(total, pool, rerank, 0.8)
    assert list(retrieval.order(flipped)) == [2, 1, 0, 3]
    even = rr.reordered(total, pool, rerank, 0.5)  # all three tie: document order
    assert list(retrieval.order(even)) == [0, 1, 2, 3]


def test_sentences_split_lines_and_sentences_and_never_return_nothing():
    assert rr.sentences("Flags > MDB_NOSYNC\nDon't flush. Faster: yes") == [
        "Flags > MDB_NOSYNC",
        "Don't flush.",
        "Faster:",
        "yes",
    ]
    assert rr.sentences("x") == ["x"]


class Reversed:
    """A reranker that prefers what the first pass liked least (to see the stage act)."""

    def __init__(self) -> None:
        self.calls = 0

    def scores(self, query, passages):
        self.calls += 1
        return np.arange(len(passages), dtype=np.float32)  # the last passage first


def kb_of_vendored_site(tmp_path):
    site = tmp_path / "site"
    # Real Sphinx output vendored for the indexer's tests (Requests's docs, Debian).
    build(rr.ROOT / "tests" / "data" / "real_pages" / "sphinx", site, POLICY, HashingEmbedder(64))
    return load_knowledge(site)


def test_s4_and_s7_rank_through_the_stage_only_while_it_is_on(tmp_path):
    kb = kb_of_vendored_site(tmp_path)
    query = retrieval.plain_query("Which Python versions does Requests support?")
    vector = HashingEmbedder(64).embed([query.text])[0]
    first = retrieval.scores(kb, vector, query)
    stage = rr.Stage("top 5, alone", rr.top_chunks(5), None)
    reranker = Reversed()
    with rr.second_stage(reranker, stage):
        inside = retrieval.scores(kb, vector, query)
        quoted = retrieval.degraded_choice(kb, query, query_vector=vector)
    top5 = retrieval.order(first, 5).tolist()
    assert retrieval.order(inside, 5).tolist() == top5[::-1]  # the reranker's order
    assert quoted is not None and quoted.chunk == kb.chunks[top5[-1]]
    assert reranker.calls == 2
    assert np.array_equal(retrieval.scores(kb, vector, query), first)  # off again


def test_the_rule_refuses_a_loss_or_no_lift_and_accepts_a_clean_lift():
    base = {k.key: {"mrr": 0.5, "gap": 0.0, "quoted": 0.5, "linked": 0.5} for k in SITES}
    lifted = {k: dict(v) for k, v in base.items()}
    lifted["npm"]["quoted"] = 0.6
    assert rr.verdict({rr.BASELINE: base, "x": lifted}, "x") == "meets the quality rule"
    assert "lifts neither" in rr.verdict({rr.BASELINE: base, "x": base}, "x")
    lost = {k: dict(v) for k, v in lifted.items()}
    lost["mkdocs"]["mrr"] = 0.49
    assert "mkdocs mrr" in rr.verdict({rr.BASELINE: base, "x": lost}, "x")
    wide = {k: dict(v) for k, v in lifted.items()}
    wide["jsonc"]["gap"] = 0.04
    assert "jsonc gap" in rr.verdict({rr.BASELINE: base, "x": wide}, "x")


def test_maxsim_reads_minilms_own_token_states_and_prefers_the_matching_passage():
    # Reference from the package's own files: mean-pooled and L2-normalised, the states
    # the bench's MaxSim reads are the vector LocalEmbedder computes for the same text.
    maxsim = rr.TokenMaxSim(max_tokens=128)
    text = "MDB_NOSYNC: don't flush system buffers to disk when committing a transaction."
    pooled = maxsim.hidden(text).mean(axis=0)
    expected = maxsim.model.embed([text])[0]
    assert np.allclose(pooled / np.linalg.norm(pooled), expected, atol=1e-5)
    found = maxsim.scores(
        "skip flushing to disk on commit",
        ["Copy an environment to a file descriptor.", text],
    )
    assert found[1] > found[0]
