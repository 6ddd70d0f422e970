"""Timeouts in order on the synthesized template: every step Lambda < the workflow < the API.

A Lambda that outlives the workflow turns a handled step error into a TIMED_OUT run; a
workflow that outlives API Gateway's integration turns the contract's JSON 503 into API
Gateway's own 504. Read from the template, so it holds whatever timeouts a step is given.
"""

from __future__ import annotations

import copy
import json

import pytest

from infra import config as deploy_config
from steps.lib.runtime.stages import STAGES

from .conftest import deploy_context, function_of

pytestmark = pytest.mark.infra


def _workflow_timeout(synth) -> int:
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    body = machine["Properties"]["DefinitionString"]
    text = body if isinstance(body, str) else "".join(
        p if isinstance(p, str) else "" for p in body["Fn::Join"][1]
    )  # fmt: skip
    return int(json.loads(text)["TimeoutSeconds"])


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
    ctx["chatguard/edge"]["origin_timeout_seconds"] = slowest + 3
    edge = deploy_config.load(ctx).edge
    assert slowest < edge.workflow_timeout_seconds < edge.integration_timeout_seconds
