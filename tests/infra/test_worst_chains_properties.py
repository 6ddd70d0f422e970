"""Properties of the chain sums, on chat.asl.json with any step timeouts and INITs.

The proof guards the reservation's release, so its arithmetic is checked against a plain
per-state sum for every chain and any figures: no state's cost is dropped on a branch, a
longer step never shortens a chain, and S5 never ends a chain before the run budget does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infra import worst_chains
from infra.worst_chains import Chain, Function
from statemachine import loader
from steps.lib.runtime.stages import STAGES

DEFINITION: dict[str, Any] = json.loads(loader.definition_text())
STATES = DEFINITION["States"]
BY_PLACEHOLDER = {f"${{{s.placeholder}}}": s.state for s in STAGES}
WITHIN = loader.run_budget_seconds()

timeouts = st.fixed_dictionaries({s.state: st.integers(1, 30) for s in STAGES})
inits = st.fixed_dictionaries({s.state: st.floats(0, 3) for s in STAGES})
pre_send = st.floats(0, 10)


def _chains(t: Mapping[str, int], i: Mapping[str, float], before: float) -> list[Chain]:
    functions = {s.placeholder: Function(s.state, t[s.state], i[s.state]) for s in STAGES}
    invoke = worst_chains.Invoke(within=WITHIN, pre_send=before)
    return worst_chains.chains(DEFINITION, worst_chains.by_placeholder(functions), invoke)


def _plain_sum(chain: Chain, t: Mapping[str, int], i: Mapping[str, float], before: float) -> float:
    """Each state's cost added in order, as docs/internals.md states the rule."""
    at = 0.0
    for name in chain.states:
        state = STATES[name]
        if state["Type"] == "Parallel":
            at += 1  # the wake: each branch's asynchronous invoke is cut at 1 s
        elif state["Type"] == "Task":
            fn = BY_PLACEHOLDER[state["Resource"]]
            if fn == "Invoke":
                at = max(WITHIN, at + 1 + i[fn] + before)
            else:
                at += 1 + i[fn] + t[fn]  # one throttle retry after 1 s, then a whole run
    return at + worst_chains.SLACK


@settings(max_examples=150, deadline=None)
@given(timeouts, inits, pre_send)
def test_every_chain_is_the_plain_sum_of_its_states(t, i, before):
    found = _chains(t, i, before)
    assert len({c.states for c in found}) == len(found) == 24
    for chain in found:
        assert abs(chain.seconds - _plain_sum(chain, t, i, before)) < 1e-9, str(chain)


@settings(max_examples=100, deadline=None)
@given(timeouts, inits, pre_send, st.sampled_from([s.state for s in STAGES if s.state != "Invoke"]))
def test_a_longer_step_lengthens_every_chain_through_it_and_shortens_none(t, i, before, step):
    longer = {**t, step: t[step] + 1}
    old = {c.states: c.seconds for c in _chains(t, i, before)}
    for chain in _chains(longer, i, before):
        grew = chain.seconds - old[chain.states]
        assert grew >= -1e-9
        runs = [STATES[s].get("Resource") == f"${{{step}FunctionArn}}" for s in chain.states]
        if not any(runs):
            assert abs(grew) < 1e-9
        elif "Invoke" in chain.states[runs.index(True) :]:
            assert grew <= 1 + 1e-9  # before S5: the second may vanish into the budget's wait
        else:
            assert abs(grew - 1) < 1e-9


@settings(max_examples=100, deadline=None)
@given(timeouts, inits, pre_send)
def test_a_chain_through_s5_never_leaves_it_before_the_run_budget_ends(t, i, before):
    for chain in _chains(t, i, before):
        if "Invoke" in chain.states:
            assert chain.seconds >= WITHIN + worst_chains.SLACK
