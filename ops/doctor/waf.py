"""`chatguard doctor`: does every block of the deployed web ACL answer JSON?

The widget reads a blocked request's JSON body (``{error, blocked}``); WAF's default block is
a bare 403 that the widget can only show as "unavailable". So every rule that can block
must block with a custom response whose body is JSON, and a managed rule group must either
run in count mode or have each of its blocking rules overridden to such a response. Read on
the web ACL the distribution is actually behind (WAFv2, scope CLOUDFRONT, us-east-1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .result import Check, cannot_test, failed, passed

NAME = "WAF blocks answer JSON"
FIX = (
    "give every blocking rule a JSON custom response and run managed rule groups in count "
    "mode (infra/blocks/edge_firewall.py), then make deploy"
)
GroupRules = Callable[[Mapping[str, Any]], list[dict[str, Any]]]


def parse_web_acl_arn(arn: str) -> tuple[str, str]:
    """(name, id) of ``arn:aws:wafv2:us-east-1:ACCOUNT:global/webacl/NAME/ID``."""
    parts = arn.split(":", 5)[-1].split("/")
    if len(parts) != 4 or parts[:2] != ["global", "webacl"]:
        raise ValueError(f"not a CLOUDFRONT web ACL ARN: {arn}")
    return parts[2], parts[3]


def json_block(action: Mapping[str, Any], bodies: Mapping[str, Any]) -> bool:
    """Whether a rule action answers JSON: not a block, or a block with a JSON body."""
    if "Captcha" in action or "Challenge" in action:
        return False  # an HTML interstitial
    if "Block" not in action:
        return True  # Allow and Count do not answer the visitor
    key = (action["Block"] or {}).get("CustomResponse", {}).get("CustomResponseBodyKey")
    body = bodies.get(key or "")
    if not body or body.get("ContentType") != "APPLICATION_JSON":
        return False
    try:
        json.loads(body.get("Content", ""))
    except ValueError:
        return False
    return True


def non_json_blocks(acl: Mapping[str, Any], group_rules: GroupRules) -> list[str]:
    """Where a visitor could be blocked without a JSON body; [] when nowhere."""
    bodies = acl.get("CustomResponseBodies") or {}
    problems = [] if json_block(acl.get("DefaultAction", {}), bodies) else ["default action"]
    for rule in acl.get("Rules", []):
        if "Action" in rule:
            if not json_block(rule["Action"], bodies):
                problems.append(rule["Name"])
            continue
        if "Count" in rule.get("OverrideAction", {}):
            continue  # the whole group only counts
        group = rule.get("Statement", {}).get("ManagedRuleGroupStatement")
        if group is None:
            problems.append(f"{rule['Name']} (a rule group doctor cannot see into)")
            continue
        overrides: dict[str, Mapping[str, Any]] = {
            o["Name"]: o["ActionToUse"] for o in group.get("RuleActionOverrides") or []
        }
        for inner in group_rules(group):
            action = overrides.get(inner["Name"]) or inner.get("Action") or {}
            if not json_block(action, bodies):
                problems.append(f"{rule['Name']}/{inner['Name']}")
    return problems


def waf_blocks_answer_json(wafv2: Any, acl_arn: str) -> Check:
    if not acl_arn:
        return cannot_test(NAME, "the distribution has no web ACL", "make deploy")
    acl_name, acl_id = parse_web_acl_arn(acl_arn)
    acl = wafv2.get_web_acl(Name=acl_name, Scope="CLOUDFRONT", Id=acl_id)["WebACL"]

    def group_rules(group: Mapping[str, Any]) -> list[dict[str, Any]]:
        extra = {"VersionName": group["Version"]} if group.get("Version") else {}
        described = wafv2.describe_managed_rule_group(
            VendorName=group["VendorName"], Name=group["Name"], Scope="CLOUDFRONT", **extra
        )
        return list(described.get("Rules", []))

    problems = non_json_blocks(acl, group_rules)
    if problems:
        shown = ", ".join(problems[:5]) + (
            f" and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        return failed(NAME, f"{acl_name}: blocks with WAF's default 403 (not JSON): {shown}", FIX)
    return passed(NAME, f"{acl_name}: {len(acl.get('Rules', []))} rules, every block answers JSON")
