"""Timeouts in order on the synthesized template: every step Lambda < the workflow < the API.

A Lambda that outlives the workflow turns a handled step error into a TIMED_OUT run; a
workflow that outlives API Gateway's integration turns the contract's JSON 503 into API
Gateway's own 504. Read from the template, so it holds whatever timeouts a step is given.

One time budget per run: the answer path's worst case, added up from the template (each
Task's Lambda timeout, its throttle retry's waits, the run budget S4 and S5 are given, the
Converse timeouts in S5's environment) and the billed calls' client timeouts
(runtime/clients.py), fits inside the workflow's timeout. A throttled attempt costs only
its wait: Lambda did not run the function (the only error the ASL retries). Every other
chain (the gates, the wake, S4 failing or S5 refusing, then the release; S3 degraded then
S7), cold and warm, is added up in test_worst_chains.py.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from infra import cold_model
from infra import config as deploy_config
from infra.worst_chains import SLACK
from statemachine import loader
from steps.lib.money import metering
from steps.lib.runtime import clients
from steps.lib.runtime.stages import BY_STATE, STAGES

from .conftest import deploy_context, function_of

pytestmark = pytest.mark.infra


def _definition(synth) -> dict:
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    body = machine["Properties"]["DefinitionString"]
    text = body if isinstance(body, str) else "".join(
        p if isinstance(p, str) else '"arn"' for p in body["Fn::Join"][1]
    )  # fmt: skip
    definition: dict = json.loads(text)
    return definition


def _workflow_timeout(synth) -> int:
    return int(_definition(synth)["TimeoutSeconds"])


def _integration_timeout(synth) -> float:
    (chat,) = [
        m["Properties"]
        for m in synth.resources("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] == "POST"
    ]
    return chat["Integration"]["TimeoutInMillis"] / 1000


def test_every_step_gives_up_before_the_workflow_and_the_workflow_before_the_api(synth):
    workflow, api = _workflow_timeout(synth), _integration_timeout(synth)
    lambdas = {s.state: function_of(synth, s.state)[1]["Properties"]["Timeout"] for s in STAGES}
    assert len(lambdas) == 7
    for state, seconds in lambdas.items():
        assert seconds < workflow, f"{state}'s Lambda ({seconds} s) outlives the workflow"
    assert workflow < api, f"the workflow ({workflow} s) is not shorter than the API ({api} s)"
    # The API in turn answers before CloudFront gives up with its HTML error page.
    assert api < synth.context["chatguard/edge"]["origin_timeout_seconds"]


def test_an_origin_timeout_with_no_room_for_the_slowest_step_is_refused():
    slowest = max(stage.timeout_seconds for stage in STAGES)
    ctx = copy.deepcopy(deploy_context())
    # origin - 1 = integration, integration - 1 = workflow: equal to the slowest step.
    ctx["chatguard/edge"]["origin_timeout_seconds"] = slowest + 2
    with pytest.raises(deploy_config.ConfigError, match="origin_timeout_seconds"):
        deploy_config.load(ctx)


def test_an_origin_timeout_with_no_room_for_the_run_budget_and_the_settlement_is_refused():
    # The run budget (20 s) + S6 at its worst (a 1 s throttle wait, its cold start from
    # source as modelled, 5 s) + 1 s: within a workflow of 28 s, so an origin timeout of
    # 30 s. One less would let a billed call sent within the budget end in a TIMED_OUT run
    # whose reservation never settles.
    ctx = copy.deepcopy(deploy_context())
    settle = cold_model.settle_worst_seconds()
    assert settle > BY_STATE["Reconcile"].timeout_seconds + loader.retry_waits("Reconcile") + 1
    needed = math.ceil(loader.run_budget_seconds() + settle) + 2
    ctx["chatguard/edge"]["origin_timeout_seconds"] = needed - 1
    with pytest.raises(deploy_config.ConfigError, match="run budget"):
        deploy_config.load(ctx)
    ctx["chatguard/edge"]["origin_timeout_seconds"] = needed
    edge = deploy_config.load(ctx).edge
    assert max(s.timeout_seconds for s in STAGES) < edge.workflow_timeout_seconds


def _worst(synth, states: dict, state: str) -> float:
    """A Task at its worst: throttled on every retry, then running to its Lambda timeout."""
    function = "Reconcile" if state == "ReleaseReservation" else state
    timeout = function_of(synth, function)[1]["Properties"]["Timeout"]
    return float(timeout) + loader.state_retry_waits(states[state])


def _converse(synth) -> clients.Timeouts:
    env = function_of(synth, "Invoke")[1]["Properties"]["Environment"]["Variables"]
    return clients.Timeouts(
        float(env["CHATGUARD_BEDROCK_CONNECT_TIMEOUT_SECONDS"]),
        float(env["CHATGUARD_BEDROCK_READ_TIMEOUT_SECONDS"]),
    )


def test_the_answer_paths_worst_case_fits_the_workflow_the_api_and_cloudfront(synth):
    states, workflow = _definition(synth)["States"], _workflow_timeout(synth)
    budget = states["Invoke"]["Parameters"]["budget"]
    assert budget == states["Retrieve"]["Parameters"]["budget"]
    assert budget["startedAt.$"] == "$$.Execution.StartTime"
    within = float(budget["withinSeconds"])
    # Every billed call ends within the budget (billed_calls.py refuses one that could
    # not); the settlement after it, at its worst, still ends inside the workflow. S6 may
    # be cold: Lambda runs its INIT before the handler and outside the function timeout
    # (Lambda guide, execution environment), for as long as the model measures from source.
    reconcile = function_of(synth, "Reconcile")[1]["Properties"]
    s6_init = cold_model.init_seconds("Reconcile", "source", reconcile["MemorySize"])
    assert 0 < s6_init < cold_model.INIT_LIMIT_S
    assert within + s6_init + _worst(synth, states, "Reconcile") + SLACK <= workflow
    # The guardrail then Converse, each at its client's worst, can fit the budget at all,
    # and S5's Lambda outlives them both plus its counting (it never cuts a sent call).
    billed = clients.GUARDRAIL.worst + _converse(synth).worst
    counting = metering.COUNT_BUDGET_SECONDS + clients.COUNT.worst
    assert billed < within
    assert counting + billed <= function_of(synth, "Invoke")[1]["Properties"]["Timeout"]
    # S4's embedding at its client's worst fits S4's own Lambda timeout.
    assert clients.EMBEDDING.worst < function_of(synth, "Retrieve")[1]["Properties"]["Timeout"]
    api = _integration_timeout(synth)
    assert workflow < api < synth.context["chatguard/edge"]["origin_timeout_seconds"]


def test_a_cold_first_message_reaches_the_billed_calls_with_room_for_both(synth):
    # Every step cold, from source (the slowest bundle synthesis ships), as the model
    # measures them at the synthesized memory: S5 still starts the guardrail with room for
    # it and Converse at their clients' worst, so the budget never refuses a cold message.
    states = _definition(synth)["States"]
    within = float(states["Invoke"]["Parameters"]["budget"]["withinSeconds"])
    memory = {s.state: function_of(synth, s.state)[1]["Properties"]["MemorySize"] for s in STAGES}
    assert memory == cold_model.memory()
    reach = cold_model.cold_until("Invoke", "source", memory) + cold_model.EMBEDDING_WAIT_S
    billed = clients.GUARDRAIL.worst + _converse(synth).worst
    assert reach + billed <= within, f"a cold message reaches S5 at {reach:.2f} s"
    # The old budget (21 s) left S6 no room for its cold start: 21 s + S6's INIT + its
    # throttle wait and timeout + the slack passes the workflow's 28 s.
    workflow = _workflow_timeout(synth)
    assert (
        21 + cold_model.settle_worst_seconds()
        > workflow
        >= within + cold_model.settle_worst_seconds()
    )


def test_a_converse_timeout_that_leaves_a_cold_message_no_room_is_refused():
    ctx = copy.deepcopy(deploy_context())
    window = loader.run_budget_seconds() - clients.GUARDRAIL.worst
    read = math.floor(window - cold_model.reach_invoke_seconds()) - 1  # connect: 1 s
    ctx["chatguard"]["bedrock_read_timeout_seconds"] = read
    deploy_config.load(ctx)
    ctx["chatguard"]["bedrock_read_timeout_seconds"] = read + 1
    with pytest.raises(deploy_config.ConfigError, match="cold first message reaches S5"):
        deploy_config.load(ctx)


def test_the_wake_costs_the_path_one_invoke_round_trip_inside_the_slack(synth):
    # The wake (a quiet message only) adds one state and one asynchronous Invoke to the
    # path: Lambda answers an Event invoke once the event is queued, so it costs a round
    # trip like the one every other Task's Invoke adds beyond its function's run, which the
    # proof above sets aside in SLACK. Its three branches run side by side, are never
    # retried, and a hung Invoke is cut at TimeoutSeconds and dropped.
    states = _definition(synth)["States"]
    wake = states["WakeLaterSteps"]
    assert wake["Type"] == "Parallel" and wake["ResultPath"] is None
    tasks = [s for b in wake["Branches"] for s in b["States"].values() if s["Type"] == "Task"]
    assert len(tasks) == 3
    for task in tasks:
        assert task["Parameters"]["InvocationType"] == "Event"
        assert "Retry" not in task and task["TimeoutSeconds"] == 1
        assert task["Catch"][0]["ErrorEquals"] == ["States.ALL"]
    # Every state a quiet answered message enters, the wake included, at the model's
    # transition time (each with its Invoke round trip), still fits the slack.
    entered = cold_model.states_entered("Answer")
    assert cold_model.states_entered("Quota") == 4  # S1, its Choice, the wake, S2
    assert entered * cold_model.TRANSITION_S < SLACK
