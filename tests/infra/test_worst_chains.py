"""Every chain the synthesized workflow allows ends inside its timeout, cold and warm.

The chains are enumerated from the template's own ASL (infra/worst_chains.py follows
``Next``, ``Catch``, ``Choices`` and ``Default``), each Task at the Lambda timeout the
template gives the function it invokes, after its throttle retry's wait and, cold, the INIT
``make bench-cold`` models from source for that function's handler (the local model's load
included in S7 and S4). A run cut at the workflow's timeout after S3 reserved and before
the release would hold the reservation until its TTL and answer with the API's timeout.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from infra import cold_model, worst_chains
from infra import config as deploy_config
from infra.worst_chains import Chain, Function, Unbounded
from steps.lib.runtime.stages import BY_STATE, STAGES

from .conftest import deploy_context

pytestmark = pytest.mark.infra

# The step timeouts before this proof covered the cold first chain (S1-S7, seconds).
OLD_TIMEOUTS = {
    "OriginVerify": 3, "Quota": 3, "CostGate": 3, "Retrieve": 4, "Invoke": 26,
    "Reconcile": 5, "Degraded": 5,
}  # fmt: skip


def _machine(synth) -> Mapping[str, Any]:
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    properties: Mapping[str, Any] = machine["Properties"]
    return properties


def template_chains(
    synth, *, cold: bool = True, timeouts: Mapping[str, int] | None = None
) -> list[Chain]:
    """The chains of the deployed definition, each Task resolved through the template's
    substitutions to the Lambda resource it invokes (its Timeout, MemorySize, Handler)."""
    machine = _machine(synth)
    definition = json.loads(machine["DefinitionString"])
    lambdas = synth.resources("AWS::Lambda::Function")
    by_handler = {stage.handler_path: stage for stage in STAGES}
    functions = {}
    for placeholder, ref in machine["DefinitionSubstitutions"].items():
        props = lambdas[ref["Fn::GetAtt"][0]]["Properties"]
        state = by_handler[props["Handler"]].state
        init = cold_model.worst_init_seconds(state, props["MemorySize"]) if cold else 0.0
        timeout = (timeouts or {}).get(state, props["Timeout"])
        functions[placeholder] = Function(state, float(timeout), init)
    within = float(definition["States"]["Invoke"]["Parameters"]["budget"]["withinSeconds"])
    resolve = worst_chains.by_placeholder(functions)
    return worst_chains.chains(definition, resolve, worst_chains.invoke_bound(within))


def _workflow(synth) -> int:
    return int(json.loads(_machine(synth)["DefinitionString"])["TimeoutSeconds"])


def _through(found: list[Chain], *states: str) -> Chain:
    """The slowest chain that enters ``states`` one after another."""
    n = len(states)
    for chain in found:  # slowest first
        if any(chain.states[i : i + n] == states for i in range(len(chain.states) - n + 1)):
            return chain
    raise AssertionError(f"no chain passes {states}")


@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_every_chain_the_workflow_allows_ends_inside_its_timeout(synth, cold):
    found, workflow = template_chains(synth, cold=cold), _workflow(synth)
    late = [f"{c} ({c.seconds:.2f} s)" for c in found if c.seconds > workflow]
    assert not late, f"past the workflow's {workflow} s: {late}"
    # Every top-level state is on some chain: the walk reached the whole definition.
    states = json.loads(_machine(synth)["DefinitionString"])["States"]
    assert {s for c in found for s in c.states} == set(states)
    # Every chain ends in a state that ends the run (the answer, a refusal or a 503).
    assert all(states[c.states[-1]].get("End") for c in found)


def test_the_cold_first_chain_and_the_degraded_flood_fit_with_every_step_cold(synth):
    found, workflow = template_chains(synth), _workflow(synth)
    warm = template_chains(synth, cold=False)
    # The chain the old proof left open: the gates and the wake, S4 failing, the release.
    first = _through(found, "WakeLaterSteps", "Quota", "QuotaDecision", "CostGate",
                     "GateDecision", "Retrieve", "ReleaseReservation", "FailClosed")  # fmt: skip
    assert first.states[0] == "OriginVerify" and first.seconds <= workflow
    # The same chain warm is shorter by exactly the INITs of the functions it runs.
    ran = ("OriginVerify", "Quota", "CostGate", "Retrieve", "Reconcile")  # the release: S6's
    inits = sum(cold_model.worst_init_seconds(s, BY_STATE[s].memory_mb) for s in ran)
    assert first.seconds - _through(warm, *first.states).seconds == pytest.approx(inits)
    # S5 refusing (NotSent) then the release; S3 degraded then S7 with the model at INIT.
    assert _through(found, "Invoke", "ReleaseReservation", "FailClosed").seconds <= workflow
    flood = _through(found, "WakeLaterSteps", "Quota", "QuotaDecision", "CostGate",
                     "GateDecision", "Degraded")  # fmt: skip
    assert flood.states[-1] == "Degraded" and flood.seconds <= workflow
    # S7's INIT holds the model's load as measured: bench-cold probes S7 as shipped (the
    # local asset, default settings: it loads the model at INIT), so it is not added twice.
    from steps.lib.providers.degraded_embedder import degraded_embedder_kind
    from steps.lib.runtime.settings import Settings
    from tests.bench.cold import layout_asset

    assert layout_asset("shipped", BY_STATE["Degraded"]).local_model
    assert degraded_embedder_kind(Settings()) == "local"
    assert "Degraded" not in cold_model.MODEL_AT_INIT


def test_the_old_timeouts_fail_the_whole_path_proof(synth):
    # The naive variant on the same harness: the timeouts the gates had before this proof,
    # every step cold. The first message refused by S5 and released no longer fits.
    workflow = _workflow(synth)
    found = template_chains(synth, timeouts=OLD_TIMEOUTS)
    late = [c for c in found if c.seconds > workflow]
    assert late, "the old timeouts should not fit"
    assert _through(late, "Retrieve", "Invoke", "ReleaseReservation", "FailClosed") in late
    # Even warm: the old first chain only "filled 28 s exactly" without S5's key read.
    assert max(c.seconds for c in template_chains(synth, cold=False, timeouts=OLD_TIMEOUTS)) > 28


def test_synthesis_refuses_step_timeouts_whose_cold_worst_chain_does_not_fit():
    old = tuple(replace(s, timeout_seconds=OLD_TIMEOUTS[s.state]) for s in STAGES)
    with pytest.raises(deploy_config.ConfigError, match="slowest chain") as refused:
        deploy_config.load(deploy_context(), stages=old)
    assert "\n" not in str(refused.value) and "stages.py" in str(refused.value)
    # One second more on the release alone is enough: the settlement chain has < 1 s left.
    longer = tuple(
        replace(s, timeout_seconds=s.timeout_seconds + 1) if s.state == "Reconcile" else s
        for s in STAGES
    )
    with pytest.raises(deploy_config.ConfigError, match="slowest chain"):
        deploy_config.load(deploy_context(), stages=longer)


def test_the_shipped_configuration_passes_with_its_slowest_chain_inside_the_workflow():
    edge = deploy_config.load(deploy_context()).edge
    slowest = worst_chains.shipped()[0]
    assert slowest.seconds <= edge.workflow_timeout_seconds
    assert worst_chains.shipped(cold=False)[0].seconds < slowest.seconds


def _definition() -> dict[str, Any]:
    from statemachine import loader

    definition: dict[str, Any] = json.loads(loader.definition_text())
    return definition


def _functions(**timeouts: float) -> dict[str, Function]:
    return {
        s.placeholder: Function(s.state, timeouts.get(s.state, s.timeout_seconds), 0.0)
        for s in STAGES
    }


def test_a_state_added_later_is_on_the_chains_without_editing_the_proof():
    definition = copy.deepcopy(_definition())
    states = definition["States"]
    # A new Lambda step between S3 and its Choice, bounded by its own TimeoutSeconds.
    states["Audit"] = {
        "Type": "Task", "Resource": "${QuotaFunctionArn}", "TimeoutSeconds": 7,
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "FailClosed"}], "Next": "GateDecision",
    }  # fmt: skip
    states["CostGate"]["Next"] = "Audit"
    resolve = worst_chains.by_placeholder(_functions())
    before = worst_chains.chains(_definition(), resolve, worst_chains.invoke_bound(20))
    after = worst_chains.chains(definition, resolve, worst_chains.invoke_bound(20))
    through = [c for c in after if "Audit" in c.states]
    assert through and len(after) > len(before)
    degraded = _through(after, "CostGate", "Audit", "GateDecision", "Degraded")
    old = _through(before, "CostGate", "GateDecision", "Degraded")
    assert degraded.seconds - old.seconds == pytest.approx(min(7, 2))  # Quota's 2 s binds


@pytest.mark.parametrize(
    "state",
    [
        {"Type": "Wait", "Seconds": 3, "Next": "FailClosed"},
        {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem", "Next": "FailClosed"},
        {"Type": "Pass", "Next": "OriginVerify"},
    ],
    ids=["unknown-type", "task-without-bound", "loop"],
)
def test_a_state_the_proof_cannot_bound_is_refused_not_skipped(state):
    definition = copy.deepcopy(_definition())
    definition["States"]["Unbounded"] = state
    definition["States"]["OriginDecision"]["Default"] = "Unbounded"
    resolve = worst_chains.by_placeholder(_functions())
    with pytest.raises(Unbounded):
        worst_chains.chains(definition, resolve, worst_chains.invoke_bound(20))


def test_a_throttle_only_retry_costs_its_wait_and_any_other_retry_a_whole_run():
    definition = copy.deepcopy(_definition())
    resolve = worst_chains.by_placeholder(_functions())
    base = _through(worst_chains.chains(definition, resolve, worst_chains.invoke_bound(20)),
                    "OriginVerify", "OriginDecision", "OriginRefused")  # fmt: skip
    definition["States"]["OriginVerify"]["Retry"][0]["ErrorEquals"].append("States.Timeout")
    retried = _through(worst_chains.chains(definition, resolve, worst_chains.invoke_bound(20)),
                       "OriginVerify", "OriginDecision", "OriginRefused")  # fmt: skip
    # The same wait, plus a second run of S1 to its timeout (it may have run).
    assert retried.seconds - base.seconds == pytest.approx(STAGES[0].timeout_seconds)
