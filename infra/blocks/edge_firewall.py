"""The CLOUDFRONT-scope web ACL: the cheapest, earliest refusals (funnel layer E1).

A blocked request never reaches API Gateway, a Lambda or the model. The rate rule counts
requests per client IP over a fixed window (60/120/300/600 s, limit floor 10), scoped to
the chat route so page and widget loads never use up a visitor's allowance; the size rule
refuses chat bodies over the contract's limit (bodies WAF cannot fully see count as too big).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from infra.config import EdgeConfig
from steps.lib.request.edge_blocks import BLOCK_STATUS, RATE_BLOCKED, SIZE_BLOCKED, body_text

CHAT_PREFIX = "/chat"
RATE_RULE = "ChatRateLimit"
SIZE_RULE = "ChatBodyTooLarge"
# Custom response bodies: a blocked /chat request gets JSON the widget understands, not
# CloudFront's HTML 403 page (keys are what each rule's block action refers to).
RATE_BODY_KEY = "chat-rate-blocked"
SIZE_BODY_KEY = "chat-size-blocked"
RESPONSE_BODIES = {RATE_BODY_KEY: RATE_BLOCKED, SIZE_BODY_KEY: SIZE_BLOCKED}
MANAGED_GROUPS = (
    "AWSManagedRulesCommonRuleSet",
    "AWSManagedRulesKnownBadInputsRuleSet",
    "AWSManagedRulesAmazonIpReputationList",
)


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )


def _block_with(body_key: str) -> wafv2.CfnWebACL.RuleActionProperty:
    return wafv2.CfnWebACL.RuleActionProperty(
        block=wafv2.CfnWebACL.BlockActionProperty(
            custom_response=wafv2.CfnWebACL.CustomResponseProperty(
                response_code=BLOCK_STATUS, custom_response_body_key=body_key
            )
        )
    )


def _chat_path() -> wafv2.CfnWebACL.StatementProperty:
    return wafv2.CfnWebACL.StatementProperty(
        byte_match_statement=wafv2.CfnWebACL.ByteMatchStatementProperty(
            field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(uri_path={}),
            positional_constraint="STARTS_WITH",
            search_string=CHAT_PREFIX,
            # Decode first: "/%63hat" must count as "/chat" whether or not CloudFront
            # normalises the path before it picks the /chat* behavior.
            text_transformations=[
                wafv2.CfnWebACL.TextTransformationProperty(priority=0, type="URL_DECODE")
            ],
        )
    )


class EdgeFirewall(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        edge: EdgeConfig,
        body_max_bytes: int,
    ) -> None:
        super().__init__(scope, construct_id)
        self.web_acl_name = name
        rules = [self._size_rule(body_max_bytes), self._rate_rule(edge)]
        if edge.waf_managed_rules:
            rules += [self._managed(group, 10 + i) for i, group in enumerate(MANAGED_GROUPS)]
        self.web_acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            name=name,
            scope="CLOUDFRONT",
            description="chatguard edge: rate limit and body size on /chat",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility(name),
            rules=rules,
            custom_response_bodies={
                key: wafv2.CfnWebACL.CustomResponseBodyProperty(
                    content_type="APPLICATION_JSON", content=body_text(body)
                )
                for key, body in RESPONSE_BODIES.items()
            },
        )

    @staticmethod
    def _size_rule(body_max_bytes: int) -> wafv2.CfnWebACL.RuleProperty:
        too_big = wafv2.CfnWebACL.StatementProperty(
            size_constraint_statement=wafv2.CfnWebACL.SizeConstraintStatementProperty(
                field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(
                    # MATCH: a body past what WAF inspects is treated as too large, not allowed.
                    body=wafv2.CfnWebACL.BodyProperty(oversize_handling="MATCH")
                ),
                comparison_operator="GT",
                size=body_max_bytes,
                text_transformations=[
                    wafv2.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")
                ],
            )
        )
        return wafv2.CfnWebACL.RuleProperty(
            name=SIZE_RULE,
            priority=0,
            action=_block_with(SIZE_BODY_KEY),
            statement=wafv2.CfnWebACL.StatementProperty(
                and_statement=wafv2.CfnWebACL.AndStatementProperty(
                    statements=[_chat_path(), too_big]
                )
            ),
            visibility_config=_visibility(SIZE_RULE),
        )

    @staticmethod
    def _rate_rule(edge: EdgeConfig) -> wafv2.CfnWebACL.RuleProperty:
        return wafv2.CfnWebACL.RuleProperty(
            name=RATE_RULE,
            priority=1,
            action=_block_with(RATE_BODY_KEY),
            statement=wafv2.CfnWebACL.StatementProperty(
                rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                    limit=edge.waf_rate_limit,
                    evaluation_window_sec=edge.waf_window_seconds,
                    aggregate_key_type="IP",
                    scope_down_statement=_chat_path(),
                )
            ),
            visibility_config=_visibility(RATE_RULE),
        )

    @staticmethod
    def _managed(group: str, priority: int) -> wafv2.CfnWebACL.RuleProperty:
        overrides: list[Any] = []
        if group == "AWSManagedRulesCommonRuleSet":
            # Its 8 KB body rule would refuse valid chat bodies; our own size rule owns that.
            overrides.append(
                wafv2.CfnWebACL.RuleActionOverrideProperty(
                    name="SizeRestrictions_BODY",
                    action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={}),
                )
            )
        return wafv2.CfnWebACL.RuleProperty(
            name=group,
            priority=priority,
            # Count, never block: the Common set's body rules (cross-site scripting, SQL
            # injection) match ordinary questions on a security blog, and a managed block
            # answers WAF's default non-JSON 403 the widget cannot show. Counting keeps the
            # group's metrics and sampled requests for the operator to judge; the override
            # turns the group's result into count only
            # (https://docs.aws.amazon.com/waf/latest/APIReference/API_OverrideAction.html).
            override_action=wafv2.CfnWebACL.OverrideActionProperty(count={}),
            statement=wafv2.CfnWebACL.StatementProperty(
                managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                    vendor_name="AWS", name=group, rule_action_overrides=overrides or None
                )
            ),
            visibility_config=_visibility(group),
        )
