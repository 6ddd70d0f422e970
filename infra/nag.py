"""cdk-nag suppressions, always with a reason, always next to the resource they concern."""

from __future__ import annotations

from collections.abc import Sequence

from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo
from constructs import IConstruct


def suppress(
    construct: IConstruct,
    rule: str,
    reason: str,
    *,
    applies_to: Sequence[str | RegexAppliesTo] = (),
    children: bool = True,
) -> None:
    """Suppress one AwsSolutions rule on ``construct`` (and its children) with a sentence."""
    if not (reason[:1].isupper() and reason.endswith(".") and len(reason.split()) >= 6):
        raise ValueError(f"a suppression reason must be a full sentence: {reason!r}")
    NagSuppressions.add_resource_suppressions(
        construct,
        [
            NagPackSuppression(
                id=f"AwsSolutions-{rule}",
                reason=reason,
                applies_to=list(applies_to) or None,
            )
        ],
        apply_to_children=children,
    )


def regex(pattern: str) -> RegexAppliesTo:
    """An ``applies_to`` entry matched as a regular expression by cdk-nag."""
    return RegexAppliesTo(regex=f"/{pattern}/g")


XRAY_REASON = (
    "X-Ray's PutTraceSegments and PutTelemetryRecords do not support resource-level "
    "permissions, so active tracing needs Resource '*'."
)
INVOKE_VERSIONS_REASON = (
    "The wildcard only covers versions and aliases of the named step function, which the "
    "state machine invokes by its unqualified ARN."
)
VENDED_LOGS_REASON = (
    "Step Functions log delivery uses CloudWatch Logs delivery actions that only accept "
    "Resource '*'."
)
CDK_HELPER_REASON = (
    "This function is an AWS CDK helper whose runtime and policy CDK manages; it runs only "
    "during deployments and never on the request path."
)


def suppress_cdk_helper(helper: IConstruct) -> None:
    """A CDK-generated helper function (e.g. BucketDeployment's) and its role."""
    NagSuppressions.add_resource_suppressions(
        helper,
        [
            NagPackSuppression(id=f"AwsSolutions-{rule}", reason=CDK_HELPER_REASON)
            for rule in ("IAM4", "IAM5", "L1")
        ],
        apply_to_children=True,
    )


RUNTIME_REASON = (
    "The step code and its bundled wheels are built for CPython 3.13 (python3.13 on arm64); "
    "moving to a newer runtime means rebuilding and testing those wheels first."
)
