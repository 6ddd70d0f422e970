"""Canned AWS answers for `chatguard doctor`'s tests: one healthy account, and the ways a
deployed account can break each assumption. Shapes are AWS's (Stubber validates them
against botocore's service models); no network."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import boto3

REGION = "eu-west-1"
ACCOUNT = "111122223333"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:ChatguardChat-AlertsTopic-ABC"
ALARM = "ChatguardChat-InvokeAlarmsErrors-XYZ"
# The alarm's last state change, on AWS's clock: an action after it was caused by doctor.
LAST_CHANGE = datetime(2026, 11, 15, 11, 0, tzinfo=UTC)
AFTER = datetime(2026, 11, 15, 12, 0, 5, tzinfo=UTC)
MODEL = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
MARKETPLACE = "Claude Haiku 4.5 (Amazon Bedrock Edition)"
ACL_ARN = (
    f"arn:aws:wafv2:us-east-1:{ACCOUNT}:global/webacl/ChatguardEdge-{REGION}-chat/"
    "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111"
)
# The knowledge center's example of the failure (cloudwatch-receive-sns-for-alarm-trigger).
NOT_AUTHORIZED = (
    f'Failed to execute action {TOPIC}. Received error: "Resource: '
    f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{ALARM} is not authorized to perform: "
    f'SNS:Publish on resource: {TOPIC}"'
)
DELIVERED = f"Successfully executed action {TOPIC}"


def client(service: str, region: str = REGION) -> Any:
    return boto3.client(
        service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x"
    )


def metric_alarm(name: str = ALARM, state: str = "OK", **extra: Any) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "StateValue": state,
        "StateUpdatedTimestamp": LAST_CHANGE,
        "ActionsEnabled": True,
        "AlarmActions": [TOPIC],
        **extra,
    }


def action_item(summary: str, when: datetime = AFTER) -> dict[str, Any]:
    return {
        "AlarmName": ALARM,
        "AlarmType": "MetricAlarm",
        "Timestamp": when,
        "HistoryItemType": "Action",
        "HistorySummary": summary,
    }


def titan_answer(dimensions: int) -> dict[str, Any]:
    body = json.dumps({"embedding": [0.01] * dimensions, "inputTextTokenCount": 9}).encode()
    return {"body": io.BytesIO(body), "contentType": "application/json"}


GUARDRAIL_USAGE = {
    "topicPolicyUnits": 1, "contentPolicyUnits": 1, "wordPolicyUnits": 0,
    "sensitiveInformationPolicyUnits": 0, "sensitiveInformationPolicyFreeUnits": 0,
    "contextualGroundingPolicyUnits": 0,
}  # fmt: skip
GUARDRAIL_PASSES = {"action": "NONE", "outputs": [], "assessments": [], "usage": GUARDRAIL_USAGE}
CONVERSE_ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ready"}]}},
    "stopReason": "max_tokens",
    "usage": {"inputTokens": 14, "outputTokens": 1, "totalTokens": 15},
    "metrics": {"latencyMs": 300},
}


def cost_groups(*services: str) -> dict[str, Any]:
    groups = [
        {"Keys": [s], "Metrics": {"UnblendedCost": {"Amount": "1.5", "Unit": "USD"}}}
        for s in services
    ]
    period = {"TimePeriod": {"Start": "2026-10-16", "End": "2026-11-15"}, "Groups": groups}
    return {"ResultsByTime": [period]}


def budget(services: list[str]) -> dict[str, Any]:
    return {
        "Budget": {
            "BudgetName": "ChatguardChat-eu-west-1-model-monthly",
            "TimeUnit": "MONTHLY",
            "BudgetType": "COST",
            "FilterExpression": {"Dimensions": {"Key": "SERVICE", "Values": services}},
        }
    }


JSON_BODIES = {
    "chat-rate-blocked": {
        "ContentType": "APPLICATION_JSON",
        "Content": '{"error":"Too many requests","blocked":"rate"}',
    },
    "chat-size-blocked": {
        "ContentType": "APPLICATION_JSON",
        "Content": '{"error":"Message too large","blocked":"size"}',
    },
}
VISIBILITY = {"SampledRequestsEnabled": True, "CloudWatchMetricsEnabled": True, "MetricName": "m"}


def block_with(key: str) -> dict[str, Any]:
    return {"Block": {"CustomResponse": {"ResponseCode": 403, "CustomResponseBodyKey": key}}}


def own_rule(name: str, action: dict[str, Any]) -> dict[str, Any]:
    statement = {"RateBasedStatement": {"Limit": 20, "AggregateKeyType": "IP"}}
    return {
        "Name": name,
        "Priority": 1,
        "Statement": statement,
        "Action": action,
        "VisibilityConfig": VISIBILITY,
    }


def managed_rule(group: str, override: dict[str, Any], **statement: Any) -> dict[str, Any]:
    return {
        "Name": group,
        "Priority": 10,
        "Statement": {
            "ManagedRuleGroupStatement": {"VendorName": "AWS", "Name": group, **statement}
        },
        "OverrideAction": override,
        "VisibilityConfig": VISIBILITY,
    }


def web_acl(rules: list[dict[str, Any]], bodies: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "WebACL": {
            "Name": f"ChatguardEdge-{REGION}-chat",
            "Id": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111",
            "ARN": ACL_ARN,
            "DefaultAction": {"Allow": {}},
            "Rules": rules,
            "VisibilityConfig": VISIBILITY,
            "CustomResponseBodies": JSON_BODIES if bodies is None else bodies,
        },
        "LockToken": "token",
    }


OUR_RULES = [
    own_rule("ChatBodyTooLarge", block_with("chat-size-blocked")),
    own_rule("ChatRateLimit", block_with("chat-rate-blocked")),
]
