"""`chatguard doctor`: does each WAF block name every origin CloudFront lets embed the chat?

A WAF block is answered by WAF itself, not through CloudFront's response headers policy, so
a cross-origin page can read the rate or size notice only when the block's own custom
response carries ``Access-Control-Allow-Origin`` for that page's origin
(infra/blocks/edge_firewall.py). The two halves live in two stacks and two Regions: the
origins CloudFront allows (the /chat behavior's response headers policy, chat stack) and
the web ACL's blocks (edge stack, us-east-1). This reads both as deployed and says which
origin a rate or size block does not name: a page there would show "unavailable" instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .result import Check, cannot_test, failed, not_applicable, passed
from .waf import parse_web_acl_arn

NAME = "WAF blocks name each site origin"
ALLOW_ORIGIN = "access-control-allow-origin"


def chat_origins(cloudfront: Any, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The origins the /chat behavior's CORS policy allows (none: same-origin only)."""
    behaviors = config.get("CacheBehaviors", {}).get("Items", [])
    chat = next((b for b in behaviors if str(b.get("PathPattern", "")).startswith("/chat")), None)
    if chat is None or not chat.get("ResponseHeadersPolicyId"):
        return ()
    policy = cloudfront.get_response_headers_policy(Id=chat["ResponseHeadersPolicyId"])
    cors = policy["ResponseHeadersPolicy"]["ResponseHeadersPolicyConfig"].get("CorsConfig") or {}
    return tuple(cors.get("AccessControlAllowOrigins", {}).get("Items", []))


def unnamed(acl: Mapping[str, Any], origins: Sequence[str]) -> list[str]:
    """``origin (kind)`` for each origin a block of that kind (rate, size) does not name."""
    kinds: dict[str, str] = {}
    for key, body in acl.get("CustomResponseBodies", {}).items():
        try:
            kinds[key] = str(json.loads(body.get("Content", "")).get("blocked", ""))
        except (ValueError, AttributeError):
            continue
    named: set[tuple[str, str]] = set()
    for rule in acl.get("Rules", []):
        custom = ((rule.get("Action") or {}).get("Block") or {}).get("CustomResponse") or {}
        kind = kinds.get(str(custom.get("CustomResponseBodyKey")), "")
        for header in custom.get("ResponseHeaders", []):
            if str(header.get("Name", "")).lower() == ALLOW_ORIGIN:
                named.add((str(header.get("Value")), kind))
    wanted = sorted({k for k in kinds.values() if k})
    return [f"{o} ({k})" for o in origins for k in wanted if (o, k) not in named]


def blocks_name_origins(cloudfront: Any, wafv2: Any, distribution_id: str) -> Check:
    config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
    origins = chat_origins(cloudfront, config)
    if not origins:
        return not_applicable(NAME, "CloudFront answers /chat same-origin only (no site_origins)")
    acl_arn = str(config.get("WebACLId", ""))
    if not acl_arn:
        return cannot_test(NAME, "the distribution has no web ACL", "make deploy")
    acl_name, acl_id = parse_web_acl_arn(acl_arn)
    acl = wafv2.get_web_acl(Name=acl_name, Scope="CLOUDFRONT", Id=acl_id)["WebACL"]
    missing = unnamed(acl, origins)
    if missing:
        return failed(
            NAME,
            f"{acl_name}: no block names {', '.join(missing)}: a page there shows "
            "'unavailable' instead of the notice",
            "deploy both stacks with the same site_origins in cdk.json (make deploy)",
        )
    return passed(
        NAME, f"{acl_name}: every rate and size block names each of {len(origins)} origins"
    )
