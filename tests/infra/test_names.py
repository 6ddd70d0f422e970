"""Names: the REST API after its stack, and every per-account name apart between Regions.

Budgets, CloudFront policies and origin access controls are unique per account, and every
copy's edge stack and web ACL live in us-east-1: a second copy of chatguard in another
Region of the same account must not reuse any of those names.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import deploy_context

pytestmark = pytest.mark.infra

ACCOUNT_UNIQUE = {  # resource type -> the property holding its per-account name
    "AWS::Budgets::Budget": ("Budget", "BudgetName"),
    "AWS::CloudFront::ResponseHeadersPolicy": ("ResponseHeadersPolicyConfig", "Name"),
    "AWS::CloudFront::OriginRequestPolicy": ("OriginRequestPolicyConfig", "Name"),
    "AWS::CloudFront::OriginAccessControl": ("OriginAccessControlConfig", "Name"),
    "AWS::WAFv2::WebACL": (None, "Name"),
}


def account_unique_names(templates: list[dict[str, Any]]) -> set[tuple[str, str]]:
    names = set()
    for template in templates:
        for resource in template["Resources"].values():
            where = ACCOUNT_UNIQUE.get(resource["Type"])
            if where:
                block = resource["Properties"]
                block = block[where[0]] if where[0] else block
                names.add((resource["Type"], block[where[1]]))
    return names


def _templates(outdir: Path) -> tuple[list[dict[str, Any]], set[str]]:
    manifest = json.loads((outdir / "manifest.json").read_text(encoding="utf-8"))
    stacks = {
        a["displayName"]: a["properties"]["templateFile"]
        for a in manifest["artifacts"].values()
        if a["type"] == "aws:cloudformation:stack"
    }
    names = {
        a["properties"].get("stackName", a["displayName"])
        for a in manifest["artifacts"].values()
        if a["type"] == "aws:cloudformation:stack"
    }
    templates = [json.loads((outdir / f).read_text(encoding="utf-8")) for f in stacks.values()]
    return templates, names


def test_the_rest_api_and_its_alarm_are_named_after_the_stack(synth) -> None:
    (api,) = synth.resources("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["Name"] == synth.chat_stack.stack_name
    alarms = [
        a["Properties"]
        for a in synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Namespace") == "AWS/ApiGateway"
    ]
    assert alarms
    for alarm in alarms:
        dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        assert dimensions["ApiName"] == synth.chat_stack.stack_name


def test_a_second_copy_in_another_region_shares_no_per_account_name(synth, tmp_path) -> None:
    from infra.application import build

    context = copy.deepcopy(deploy_context())
    context["chatguard/ops"]["chat_region"] = "ap-southeast-2"
    build(context, outdir=str(tmp_path)).synth()
    first, first_stacks = _templates(synth.outdir)
    second, second_stacks = _templates(tmp_path)
    first_names, second_names = account_unique_names(first), account_unique_names(second)
    kinds = {kind for kind, _ in first_names}
    assert kinds == set(ACCOUNT_UNIQUE), kinds  # every kind is really checked
    assert first_names.isdisjoint(second_names), first_names & second_names
    # Both edge stacks deploy to us-east-1, so their names differ; the chat stacks may share
    # theirs (stack names are per Region).
    assert first_stacks & second_stacks == {"ChatguardChat"}
    edge_names = {n for n in first_stacks | second_stacks if n.startswith("ChatguardEdge")}
    assert len(edge_names) == 2
