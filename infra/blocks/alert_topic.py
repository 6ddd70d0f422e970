"""The SNS topic every alarm and budget notification goes to, with the e-mail subscribers."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra import nag


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
