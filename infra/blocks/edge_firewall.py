"""The CLOUDFRONT-scope web ACL: the cheapest, earliest refusals (funnel layer E1).

A blocked request never reaches API Gateway, a Lambda or the model. The rate rule counts
POST requests per client IP over a fixed window (60/120/300/600 s, limit floor 10), scoped
to the chat route so page and widget loads, and a cross-origin visitor's CORS preflights
(OPTIONS /chat), never use up a visitor's allowance; the size rule refuses chat bodies over
the contract's limit (bodies WAF cannot fully see count as too big).

A block is answered by WAF itself, so CloudFront's response headers policy (which carries
the /chat CORS headers) never sees it: without CORS headers in the block's own custom
response a cross-origin page cannot read the 403, and the widget says "unavailable"
instead of its rate or size notice. A custom response's headers are static
(https://docs.aws.amazon.com/waf/latest/developerguide/customizing-the-response-for-blocked-requests.html),
so the two rules only count and label the request (a Count action does not end the
evaluation: https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-label-overview.html),
and later rules block on the label (a label match statement without a prefix looks in this
web ACL's own namespace:
https://docs.aws.amazon.com/waf/latest/APIReference/API_LabelMatchStatement.html): one pair
per configured site origin whose Origin header matches exactly, each answering with
``Access-Control-Allow-Origin`` for that origin only, then a pair for every other request
(same-origin, or an origin not listed: no ``Access-Control-Allow-Origin``, as CloudFront
answers it). Each rule costs 1.00 USD a month: 2 per listed origin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from infra.config import EdgeConfig
from steps.lib.request.edge_blocks import BLOCK_STATUS, RATE_BLOCKED, SIZE_BLOCKED, body_text

CHAT_PREFIX = "/chat"
RATE_RULE = "ChatRateLimit"
SIZE_RULE = "ChatBodyTooLarge"
# What each counting rule adds to a request it matches; the blocking rules match on these.
RATE_LABEL = "chatguard:rate-limited"
SIZE_LABEL = "chatguard:body-too-large"
# Custom response bodies: a blocked /chat request gets JSON the widget understands, not
# CloudFront's HTML 403 page (keys are what each rule's block action refers to).
RATE_BODY_KEY = "chat-rate-blocked"
SIZE_BODY_KEY = "chat-size-blocked"
RESPONSE_BODIES = {RATE_BODY_KEY: RATE_BLOCKED, SIZE_BODY_KEY: SIZE_BLOCKED}
# (label, body key, rule name stem), in the order they block: a request both too large and
# over the rate gets the size notice (start a new conversation), as before labels.
BLOCKS = (
    (SIZE_LABEL, SIZE_BODY_KEY, "ChatSizeBlocked"),
    (RATE_LABEL, RATE_BODY_KEY, "ChatRateBlocked"),
)
FIRST_MANAGED_PRIORITY = 1000  # after every block rule, however many origins are listed
MANAGED_GROUPS = (
    "AWSManagedRulesCommonRuleSet",
    "AWSManagedRulesKnownBadInputsRuleSet",
    "AWSManagedRulesAmazonIpReputationList",
)


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )


def cors_headers(origin: str | None, any_listed: bool) -> list[tuple[str, str]]:
    """What a block answers beside its body: the origin it is for, and ``Vary: Origin``
    whenever answers differ by origin (as CloudFront's CORS policy answers /chat)."""
    headers = [("Access-Control-Allow-Origin", origin)] if origin else []
    return headers + ([("Vary", "Origin")] if any_listed else [])


def _block_with(
    body_key: str, headers: Sequence[tuple[str, str]]
) -> wafv2.CfnWebACL.RuleActionProperty:
    return wafv2.CfnWebACL.RuleActionProperty(
        block=wafv2.CfnWebACL.BlockActionProperty(
            custom_response=wafv2.CfnWebACL.CustomResponseProperty(
                response_code=BLOCK_STATUS,
                custom_response_body_key=body_key,
                response_headers=[
                    wafv2.CfnWebACL.CustomHTTPHeaderProperty(name=name, value=value)
                    for name, value in headers
                ]
                or None,
            )
        )
    )


def _count_and_label(label: str) -> dict[str, Any]:
    return {
        "action": wafv2.CfnWebACL.RuleActionProperty(count={}),
        "rule_labels": [wafv2.CfnWebACL.LabelProperty(name=label)],
    }


def _exactly(
    field: wafv2.CfnWebACL.FieldToMatchProperty, value: str
) -> wafv2.CfnWebACL.StatementProperty:
    return wafv2.CfnWebACL.StatementProperty(
        byte_match_statement=wafv2.CfnWebACL.ByteMatchStatementProperty(
            field_to_match=field,
            positional_constraint="EXACTLY",
            search_string=value,
            text_transformations=[
                wafv2.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")
            ],
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


def _chat_posts() -> wafv2.CfnWebACL.StatementProperty:
    # POST only: a browser's CORS preflight (OPTIONS /chat) precedes every cross-origin
    # message; counted, it would halve a cross-origin visitor's allowance.
    post = _exactly(wafv2.CfnWebACL.FieldToMatchProperty(method={}), "POST")
    return wafv2.CfnWebACL.StatementProperty(
        and_statement=wafv2.CfnWebACL.AndStatementProperty(statements=[_chat_path(), post])
    )


def _labelled(label: str) -> wafv2.CfnWebACL.StatementProperty:
    return wafv2.CfnWebACL.StatementProperty(
        label_match_statement=wafv2.CfnWebACL.LabelMatchStatementProperty(scope="LABEL", key=label)
    )


def _from_origin(origin: str) -> wafv2.CfnWebACL.StatementProperty:
    # Header names match case-insensitively; the value exactly, as the allow-list is exact.
    # single_header is a JSON passthrough in CDK: its key is written as CloudFormation spells it.
    header = wafv2.CfnWebACL.FieldToMatchProperty(single_header={"Name": "origin"})
    return _exactly(header, origin)


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
        rules += self._block_rules(edge.site_origins, first_priority=len(rules))
        if edge.waf_managed_rules:
            rules += [
                self._managed(group, FIRST_MANAGED_PRIORITY + i)
                for i, group in enumerate(MANAGED_GROUPS)
            ]
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
            statement=wafv2.CfnWebACL.StatementProperty(
                and_statement=wafv2.CfnWebACL.AndStatementProperty(
                    statements=[_chat_path(), too_big]
                )
            ),
            visibility_config=_visibility(SIZE_RULE),
            **_count_and_label(SIZE_LABEL),
        )

    @staticmethod
    def _rate_rule(edge: EdgeConfig) -> wafv2.CfnWebACL.RuleProperty:
        return wafv2.CfnWebACL.RuleProperty(
            name=RATE_RULE,
            priority=1,
            statement=wafv2.CfnWebACL.StatementProperty(
                rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                    limit=edge.waf_rate_limit,
                    evaluation_window_sec=edge.waf_window_seconds,
                    aggregate_key_type="IP",
                    scope_down_statement=_chat_posts(),
                )
            ),
            visibility_config=_visibility(RATE_RULE),
            **_count_and_label(RATE_LABEL),
        )

    @staticmethod
    def _block_rules(
        origins: Sequence[str], *, first_priority: int
    ) -> list[wafv2.CfnWebACL.RuleProperty]:
        """Per listed origin a size and a rate block naming it, then both for the rest."""
        listed = bool(origins)
        plan: list[tuple[str | None, str, str, str]] = [
            (origin, label, key, f"{stem}Origin{i}")
            for i, origin in enumerate(origins)
            for label, key, stem in BLOCKS
        ]
        plan += [(None, label, key, stem) for label, key, stem in BLOCKS]
        rules = []
        for priority, (origin, label, key, name) in enumerate(plan, start=first_priority):
            statement = _labelled(label)
            if origin is not None:
                statement = wafv2.CfnWebACL.StatementProperty(
                    and_statement=wafv2.CfnWebACL.AndStatementProperty(
                        statements=[statement, _from_origin(origin)]
                    )
                )
            rules.append(
                wafv2.CfnWebACL.RuleProperty(
                    name=name,
                    priority=priority,
                    action=_block_with(key, cors_headers(origin, listed)),
                    statement=statement,
                    visibility_config=_visibility(name),
                )
            )
        return rules

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
