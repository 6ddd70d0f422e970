"""doctor's check that each WAF block names every origin CloudFront allows, on stubbed
accounts: blocks per origin pass; the blocks the stack had before (no response headers),
or an origin added to the chat stack but not to the edge, fail."""

from __future__ import annotations

from typing import Any

from botocore.stub import Stubber

from ops.doctor import waf_cors

from . import doctor_accounts as acct
from .conftest import distribution_config

ORIGIN = "https://www.example.com"
POLICY = "0a1b2c3d-chat-headers"


def label(key: str) -> dict[str, Any]:
    return {"LabelMatchStatement": {"Scope": "LABEL", "Key": key}}


def block(name: str, priority: int, body_key: str, origin: str | None) -> dict[str, Any]:
    custom: dict[str, Any] = {"ResponseCode": 403, "CustomResponseBodyKey": body_key}
    if origin:
        custom["ResponseHeaders"] = [
            {"Name": "Access-Control-Allow-Origin", "Value": origin},
            {"Name": "Vary", "Value": "Origin"},
        ]
    return {
        "Name": name,
        "Priority": priority,
        "Statement": label(f"chatguard:{body_key}"),
        "Action": {"Block": {"CustomResponse": custom}},
        "VisibilityConfig": acct.VISIBILITY | {"MetricName": name},
    }


def blocks(origin: str | None) -> list[dict[str, Any]]:
    return [
        block("ChatSizeBlockedOrigin0", 2, "chat-size-blocked", origin),
        block("ChatRateBlockedOrigin0", 3, "chat-rate-blocked", origin),
        block("ChatSizeBlocked", 4, "chat-size-blocked", None),
        block("ChatRateBlocked", 5, "chat-rate-blocked", None),
    ]


def chat_behavior_config() -> dict[str, Any]:
    chat = {
        "PathPattern": "/chat*",
        "TargetOriginId": "api-origin",
        "ViewerProtocolPolicy": "https-only",
        "ResponseHeadersPolicyId": POLICY,
    }
    config = distribution_config("a" * 43) | {"WebACLId": acct.ACL_ARN}
    return config | {"CacheBehaviors": {"Quantity": 1, "Items": [chat]}}


def headers_policy(origins: list[str]) -> dict[str, Any]:
    cors = {
        "AccessControlAllowOrigins": {"Quantity": len(origins), "Items": origins},
        "AccessControlAllowHeaders": {"Quantity": 1, "Items": ["Content-Type"]},
        "AccessControlAllowMethods": {"Quantity": 2, "Items": ["POST", "OPTIONS"]},
        "AccessControlAllowCredentials": False,
        "OriginOverride": True,
    }
    config = {"Name": "chat", "CorsConfig": cors}
    return {
        "ResponseHeadersPolicy": {
            "Id": POLICY,
            "LastModifiedTime": acct.LAST_CHANGE,
            "ResponseHeadersPolicyConfig": config,
        }
    }


def run(config: dict[str, Any], origins: list[str] | None, rules: list[dict[str, Any]] | None):
    cloudfront, wafv2 = acct.client("cloudfront", "us-east-1"), acct.client("wafv2", "us-east-1")
    with Stubber(cloudfront) as cf, Stubber(wafv2) as waf:
        cf.add_response(
            "get_distribution_config", {"DistributionConfig": config}, {"Id": "E2EXAMPLE"}
        )
        if origins is not None:
            cf.add_response("get_response_headers_policy", headers_policy(origins), {"Id": POLICY})
        if rules is not None:
            waf.add_response("get_web_acl", acct.web_acl(rules))
        check = waf_cors.blocks_name_origins(cloudfront, wafv2, "E2EXAMPLE")
        cf.assert_no_pending_responses()
        waf.assert_no_pending_responses()
    return check


def test_blocks_that_name_every_allowed_origin_pass() -> None:
    check = run(chat_behavior_config(), [ORIGIN], blocks(ORIGIN))
    assert check.outcome == "PASS", check


def test_the_blocks_the_stack_had_before_fail() -> None:
    check = run(chat_behavior_config(), [ORIGIN], blocks(None))
    assert check.outcome == "FAIL"
    assert f"{ORIGIN} (rate)" in check.detail and f"{ORIGIN} (size)" in check.detail


def test_an_origin_the_edge_stack_was_not_deployed_with_fails() -> None:
    other = "https://blog.example.org"
    check = run(chat_behavior_config(), [ORIGIN, other], blocks(ORIGIN))
    assert check.outcome == "FAIL" and other in check.detail and ORIGIN + " (" not in check.detail


def test_a_same_origin_chat_is_not_applicable() -> None:
    config = distribution_config("a" * 43) | {"WebACLId": acct.ACL_ARN}
    assert run(config, None, None).outcome == "NOT APPLICABLE"
