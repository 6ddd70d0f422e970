"""The IAM statements of each step: what it needs, on exactly the items and ARNs it touches.

DynamoDB item scoping uses ``dynamodb:LeadingKeys`` (the partition key of every item a
request touches, transactions included), so a step's role cannot write another step's
items even though all of them live in one table.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from steps.lib.providers.embedder_choice import embedder_kind
from steps.lib.providers.model_ids import foundation_model_id, split_profile
from steps.lib.runtime.settings import Settings


def items(
    table_arn: str, actions: Sequence[str], leading_keys: Sequence[str]
) -> iam.PolicyStatement:
    """``actions`` on the table, only for items whose partition key matches ``leading_keys``."""
    return iam.PolicyStatement(
        actions=[f"dynamodb:{a}" for a in actions],
        resources=[table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(leading_keys)}},
    )


def read_parameter(parameter_arn: str) -> iam.PolicyStatement:
    # SecureStrings use the AWS managed key aws/ssm, whose key policy already lets principals
    # of this account decrypt through SSM: no kms statement is needed (or wanted).
    return iam.PolicyStatement(actions=["ssm:GetParameter"], resources=[parameter_arn])


def parameter_arn(scope: Construct, name: str) -> str:
    return Stack.of(scope).format_arn(
        service="ssm", resource="parameter", resource_name=name.lstrip("/")
    )


def foundation_model_arn(model: str, region: str = Aws.REGION) -> str:
    return f"arn:{Aws.PARTITION}:bedrock:{region}::foundation-model/{model}"


def converse(model_id: str) -> list[iam.PolicyStatement]:
    """Converse (IAM action bedrock:InvokeModel) on one model, directly or via its profile.

    Through an inference profile Bedrock routes to the model in other Regions, so the model
    ARN is allowed in every Region (and, for a global profile, Region-less) but only when the
    call comes through this profile (``bedrock:InferenceProfileArn``).
    """
    prefix, model = split_profile(model_id)
    if prefix is None:
        return [
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"], resources=[foundation_model_arn(model)]
            )
        ]
    profile_arn = (
        f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{model_id}"
    )
    routed = [foundation_model_arn(model, "*")]
    if prefix == "global":
        routed.append(foundation_model_arn(model, ""))
    return [
        iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[profile_arn]),
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=routed,
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}},
        ),
    ]


def count_tokens(s: Settings) -> list[iam.PolicyStatement]:
    """CountTokens (free) on the bare foundation model behind the model id, in this Region:
    it refuses inference-profile ids, so S5 always counts on the model itself.

    Granted only to a model the catalogue (or cdk.json's model_metering) says counts: S5
    never calls it otherwise (model_ids.metering_for), and a grant no call uses is one
    an attacker holding the role could use and a reviewer must explain.
    """
    if not s.model_terms.counts_tokens:
        return []
    return [
        iam.PolicyStatement(
            actions=["bedrock:CountTokens"],
            resources=[foundation_model_arn(foundation_model_id(s.model_id))],
        )
    ]


def embed(s: Settings) -> list[iam.PolicyStatement]:
    """InvokeModel on the embedding model, for S4 with Titan only: the local embedder
    (embedder "local") runs inside the Lambda and calls nothing."""
    if embedder_kind(s) != "titan":
        return []
    return [
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[foundation_model_arn(s.embedding_model_id)],
        )
    ]


def apply_guardrail(guardrail_arn: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=["bedrock:ApplyGuardrail"], resources=[guardrail_arn])
