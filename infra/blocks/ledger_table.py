"""The one DynamoDB table of docs/internals.md: quota counters, spend totals, reservations.

CloudFormation chooses its name. A fixed name cannot be retried: the table is retained (and
deletion-protected), so a first deploy that fails and rolls back leaves it behind, and the
next deploy fails with "already exists". The steps get the name in their environment and
the operator CLI reads it from the stack output ``LedgerTableName`` (ops/aws.py).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

# The chat stack's output that names the table; ops/aws.py reads it by this name.
LEDGER_TABLE_OUTPUT = "LedgerTableName"


class LedgerTable(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, deletion_protection: bool) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
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
