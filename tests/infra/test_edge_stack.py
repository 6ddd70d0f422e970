"""Edge stack (us-east-1): the CLOUDFRONT web ACL, its rules and the rate-rule alarm."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra import config as deploy_config

from .conftest import SITE_ORIGINS

pytestmark = pytest.mark.infra


def _chat_path_match() -> dict:
    return {
        "ByteMatchStatement": {
            "FieldToMatch": {"UriPath": {}},
            "PositionalConstraint": "STARTS_WITH",
            "SearchString": "/chat",
            "TextTransformations": [{"Priority": 0, "Type": "URL_DECODE"}],
        }
    }


def _post_match() -> dict:
    return {
        "ByteMatchStatement": {
            "FieldToMatch": {"Method": {}},
            "PositionalConstraint": "EXACTLY",
            "SearchString": "POST",
            "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
        }
    }


def _count_and_label(label: str) -> dict:
    return {"Action": {"Count": {}}, "RuleLabels": [{"Name": label}]}


def test_every_block_on_the_chat_route_answers_json_the_widget_knows(synth):
    from steps.lib.request.edge_blocks import RATE_BLOCKED, SIZE_BLOCKED

    (acl,) = synth.resources("AWS::WAFv2::WebACL", stack="edge").values()
    props = acl["Properties"]
    bodies = props["CustomResponseBodies"]
    actions = [rule["Action"] for rule in props["Rules"]]
    blocks = [action["Block"] for action in actions if "Block" in action]
    # The two counting rules label; every other rule blocks, never with the HTML default.
    assert len(blocks) == len(props["Rules"]) - 2
    assert sum("Count" in action for action in actions) == 2
    for block in blocks:
        body = bodies[block["CustomResponse"]["CustomResponseBodyKey"]]
        assert body["ContentType"] == "APPLICATION_JSON"
    answers = [json.loads(b["Content"]) for b in bodies.values()]
    assert sorted(answers, key=str) == sorted([RATE_BLOCKED, SIZE_BLOCKED], key=str)


def test_edge_stack_lives_in_us_east_1(synth):
    assert synth.edge_stack.region == "us-east-1"
    assert synth.chat_stack.region == "eu-west-1"


def test_web_acl_rate_rule_is_scoped_to_chat_with_context_limit_and_window(synth):
    edge = synth.context["chatguard/edge"]
    synth.edge.has_resource_properties(
        "AWS::WAFv2::WebACL",
        {
            "Scope": "CLOUDFRONT",
            "DefaultAction": {"Allow": {}},
            "Rules": Match.array_with(
                [
                    Match.object_like(
                        {
                            "Name": "ChatRateLimit",
                            **_count_and_label("chatguard:rate-limited"),
                            "Statement": {
                                "RateBasedStatement": {
                                    "Limit": edge["waf_rate_limit"],
                                    "EvaluationWindowSec": edge["waf_window_seconds"],
                                    "AggregateKeyType": "IP",
                                    "ScopeDownStatement": {
                                        "AndStatement": {
                                            "Statements": [_chat_path_match(), _post_match()]
                                        }
                                    },
                                }
                            },
                            "VisibilityConfig": {
                                "CloudWatchMetricsEnabled": True,
                                "SampledRequestsEnabled": True,
                                "MetricName": "ChatRateLimit",
                            },
                        }
                    )
                ]
            ),
        },
    )


def test_web_acl_blocks_chat_bodies_over_the_contract_limit_even_when_oversize(synth):
    limit = synth.context["chatguard"]["body_max_bytes"]
    synth.edge.has_resource_properties(
        "AWS::WAFv2::WebACL",
        {
            "Rules": Match.array_with(
                [
                    Match.object_like(
                        {
                            "Name": "ChatBodyTooLarge",
                            **_count_and_label("chatguard:body-too-large"),
                            "Statement": {
                                "AndStatement": {
                                    "Statements": [
                                        _chat_path_match(),
                                        {
                                            "SizeConstraintStatement": {
                                                "FieldToMatch": {
                                                    "Body": {"OversizeHandling": "MATCH"}
                                                },
                                                "ComparisonOperator": "GT",
                                                "Size": limit,
                                                "TextTransformations": Match.any_value(),
                                            }
                                        },
                                    ]
                                }
                            },
                        }
                    )
                ]
            ),
            "VisibilityConfig": Match.object_like(
                {"CloudWatchMetricsEnabled": True, "SampledRequestsEnabled": True}
            ),
        },
    )


def test_managed_rule_groups_are_off_by_default(synth):
    (acl,) = synth.resources("AWS::WAFv2::WebACL", stack="edge").values()
    names = [rule["Name"] for rule in acl["Properties"]["Rules"]]
    per_origin = [
        f"Chat{kind}BlockedOrigin{i}" for i in range(len(SITE_ORIGINS)) for kind in ("Size", "Rate")
    ]
    fallback = ["ChatSizeBlocked", "ChatRateBlocked"]
    assert names == ["ChatBodyTooLarge", "ChatRateLimit", *per_origin, *fallback]


def test_managed_rule_groups_behind_the_flag_count_and_never_block(
    managed_groups: list[dict[str, Any]],
) -> None:
    # A block from a managed group would be WAF's default non-JSON 403 for an ordinary
    # question (the Common set's XSS and SQL injection body rules): the groups only count.
    assert managed_groups
    for group in managed_groups:
        assert group["OverrideAction"] == {"Count": {}}, group["Name"]


@pytest.fixture
def managed_groups() -> list[dict[str, Any]]:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from infra.blocks.edge_firewall import EdgeFirewall

    edge = deploy_config.EdgeConfig(
        waf_rate_limit=20, waf_window_seconds=120, waf_managed_rules=True,
        waf_blocked_alarm_threshold=10, api_throttle_rate=5, api_throttle_burst=10,
        origin_timeout_seconds=30,
    )  # fmt: skip
    stack = cdk.Stack(cdk.App(), "Probe", env=cdk.Environment(region="us-east-1"))
    EdgeFirewall(stack, "Firewall", name="probe", edge=edge, body_max_bytes=16384)
    (acl,) = Template.from_stack(stack).to_json()["Resources"].values()
    return [r for r in acl["Properties"]["Rules"] if "ManagedRuleGroupStatement" in r["Statement"]]


def test_managed_rule_groups_behind_the_flag_keep_the_body_size_to_our_rule(managed_groups):
    from infra.blocks.edge_firewall import MANAGED_GROUPS

    assert [g["Name"] for g in managed_groups] == list(MANAGED_GROUPS)
    common = managed_groups[0]["Statement"]["ManagedRuleGroupStatement"]
    assert common["RuleActionOverrides"] == [
        {"Name": "SizeRestrictions_BODY", "ActionToUse": {"Count": {}}}
    ]


def test_rate_rule_blocks_alarm_in_the_edge_region(synth):
    # The rate rule counts (the blocks per origin answer): its CountedRequests are the
    # requests over the rate (tests/infra/test_alarms_can_fire.py).
    synth.edge.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/WAFV2",
            "MetricName": "CountedRequests",
            "Dimensions": Match.array_with([{"Name": "Rule", "Value": "ChatRateLimit"}]),
            "Threshold": synth.context["chatguard/edge"]["waf_blocked_alarm_threshold"],
            "AlarmActions": Match.any_value(),
        },
    )
    synth.edge.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"}
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("waf_window_seconds", 90, "waf_window_seconds"),
        ("waf_rate_limit", 9, "waf_rate_limit"),
        ("origin_timeout_seconds", 1, "origin_timeout_seconds"),
    ],
)
def test_config_refuses_values_waf_or_cloudfront_would_reject(key, value, message):
    from tests.infra.conftest import deploy_context

    ctx = copy.deepcopy(deploy_context())
    ctx["chatguard/edge"][key] = value
    with pytest.raises(deploy_config.ConfigError, match=message):
        deploy_config.load(ctx)


def test_config_refuses_a_body_limit_waf_cannot_inspect():
    from tests.infra.conftest import deploy_context

    ctx = copy.deepcopy(deploy_context())
    ctx["chatguard"]["body_max_bytes"] = 20000
    with pytest.raises(deploy_config.ConfigError, match="body_max_bytes"):
        deploy_config.load(ctx)


def test_integration_timeout_stays_under_the_cloudfront_origin_timeout():
    from tests.infra.conftest import deploy_context

    cfg = deploy_config.load(deploy_context())
    assert cfg.edge.integration_timeout_seconds < cfg.edge.origin_timeout_seconds
    assert cfg.edge.integration_timeout_seconds <= deploy_config.API_MAX_INTEGRATION_SECONDS
