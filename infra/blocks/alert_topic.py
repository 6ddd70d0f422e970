"""The SNS topic every alarm and budget notification goes to, with the e-mail subscribers.

``enforce_ssl`` gives the topic a resource policy, and that policy replaces SNS's default
one: only the principals it names may publish. So it names CloudWatch (this account's
alarms) and, in the chat stack, AWS Budgets. Without the CloudWatch statement every alarm
action fails with "... is not authorized to perform: SNS:Publish", seen only in the alarm's
history (https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger). The
CloudWatch statement is limited as that page's example limits it, by ``aws:SourceArn``
alone (ArnLike this account's alarms in this Region: the account is part of the ARN, which
keeps out the confused deputy); no AWS page shows CloudWatch sending ``aws:SourceAccount``,
and a condition on a key the request does not carry fails, so every alarm would go silent.
Budgets is limited by ``aws:SourceAccount``
(https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html).
tests/infra/test_alarm_delivery.py walks every alarm's actions to this policy, and
``chatguard doctor`` checks delivery on the account (an alarm's action history, and a
confirmed subscription).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra import nag


def alarms_of_this_account() -> str:
    return f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"


class AlertTopic(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        emails: Sequence[str],
        allow_budgets: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Topic", display_name="chatguard alerts", enforce_ssl=True)
        for address in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                actions=["sns:Publish"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=[self.topic.topic_arn],
                conditions={
                    # Any alarm of this account in this Region: the alarms are named by
                    # CloudFormation, and a new one must not need a policy change.
                    "ArnLike": {"aws:SourceArn": alarms_of_this_account()},
                },
            )
        )
        if allow_budgets:
            self.topic.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AwsBudgetsPublish",
                    actions=["sns:Publish"],
                    principals=[iam.ServicePrincipal("budgets.amazonaws.com")],
                    resources=[self.topic.topic_arn],
                    conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
                )
            )
        nag.suppress(
            self.topic,
            "SNS2",
            "Alerts carry no user content, and CloudWatch alarms and AWS Budgets cannot publish "
            "to a topic encrypted with the AWS managed key; a customer managed key would add a "
            "fixed monthly cost to an otherwise idle stack.",
        )
