"""The one DynamoDB table of docs/internals.md: quota counters, spend totals, reservations."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct


class LedgerTable(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, table_name: str, deletion_protection: bool
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=table_name,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            # On demand: an idle site costs nothing, and there is no capacity to exhaust.
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            # A new day or month is a new item; TTL clears old ones, so nothing is ever reset.
            time_to_live_attribute="expiresAt",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=deletion_protection,
            removal_policy=RemovalPolicy.RETAIN if deletion_protection else RemovalPolicy.DESTROY,
        )
