"""`chatguard doctor`: is a person told when an alarm fires?

CloudWatch records "Successfully executed action" as soon as SNS accepts the publish
(alarm.py checks that much); SNS then delivers only to confirmed subscriptions. An
e-mail subscription stays "PendingConfirmation" until its owner follows the link AWS sends,
and ``alert_emails`` defaults to none: a topic with no confirmed subscription tells nobody.
ListSubscriptionsByTopic lists each subscription with its ARN, or "PendingConfirmation"
in its place while unconfirmed
(https://docs.aws.amazon.com/sns/latest/api/API_ListSubscriptionsByTopic.html,
https://docs.aws.amazon.com/sns/latest/dg/sns-email-notifications.html).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .result import Check, failed, passed

FIX_NONE = (
    "add an address to alert_emails in cdk.json (chatguard/ops) and deploy, then follow the "
    "link in the confirmation e-mail"
)
FIX_PENDING = "follow the link in the confirmation e-mail AWS sent (or deploy again to resend it)"


def subscriptions(sns: Any, topic_arn: str) -> Iterator[dict[str, Any]]:
    kwargs = {"TopicArn": topic_arn}
    while True:  # at most 100 a page
        page = sns.list_subscriptions_by_topic(**kwargs)
        yield from page.get("Subscriptions", [])
        if not page.get("NextToken"):
            return
        kwargs["NextToken"] = page["NextToken"]


def confirmed(subscription: dict[str, Any]) -> bool:
    # A confirmed subscription has its own ARN; "PendingConfirmation" and "Deleted" do not.
    return str(subscription.get("SubscriptionArn", "")).startswith("arn:")


def topic_tells_a_person(sns: Any, topic_arn: str, *, name: str) -> Check:
    found = list(subscriptions(sns, topic_arn))
    live = [s for s in found if confirmed(s)]
    pending = [s for s in found if s.get("SubscriptionArn") == "PendingConfirmation"]
    if live:
        protocols = sorted({str(s.get("Protocol")) for s in live})
        detail = f"{len(live)} confirmed subscription(s) ({', '.join(protocols)})"
        if pending:
            detail += f", {len(pending)} still pending"
        return passed(name, detail)
    if pending:
        return failed(
            name,
            f"{len(pending)} subscription(s) pending confirmation and none confirmed: "
            "SNS delivers to nobody",
            FIX_PENDING,
        )
    return failed(name, "the topic has no subscription: alarms reach nobody", FIX_NONE)
