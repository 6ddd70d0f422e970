"""One pipeline step: its Lambda, its own role, its log group and its alarms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra import nag
from steps.lib.runtime.stages import Stage

from .step_alarms import StepAlarms

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64


# Asynchronous invocations of every step and alias (see `PipelineStep`): no retry, and the
# shortest event age Lambda accepts.
ASYNC_RETRIES = 0
ASYNC_MAX_AGE = Duration.seconds(60)


class PipelineStep(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: Stage,
        code: lambda_.Code,
        environment: Mapping[str, str],
        statements: Sequence[iam.PolicyStatement],
        log_retention: logs.RetentionDays,
        reserved_concurrency: int | None,
        topic: sns.ITopic,
        snap_start: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.stage = stage
        # Its own role, not a shared one: what one step may do is visible in one place and
        # a bug in one step cannot use another step's permissions.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"chatguard {stage.key} {stage.state}: least privilege for this step only",
        )
        self.log_group = logs.LogGroup(
            self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=f"chatguard {stage.key} {stage.state}",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=stage.handler_path,
            code=code,
            timeout=Duration.seconds(stage.timeout_seconds),
            memory_size=stage.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            role=self.role,
            log_group=self.log_group,
            environment=dict(environment),
            reserved_concurrent_executions=reserved_concurrency,
            # Only the wake invokes a step asynchronously (statemachine/chat.asl.json): an
            # event that failed or waited is worth nothing later, so no retry and the shortest
            # age Lambda allows, not the default two retries over up to six hours (Lambda
            # guide, "Configuring error handling settings for Lambda asynchronous
            # invocations", https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html).
            retry_attempts=ASYNC_RETRIES,
            max_event_age=ASYNC_MAX_AGE,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
            # With SnapStart each published version keeps a cached snapshot (billed): replaced
            # versions are deleted rather than retained.
            current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY)
            if snap_start
            else None,
        )
        # What the workflow invokes: SnapStart only applies to a published version, so with it
        # on the target is an alias of the current version; otherwise the function itself.
        self.target: lambda_.IFunction = (
            lambda_.Alias(
                self,
                "Live",
                alias_name="live",
                version=self.function.current_version,
                retry_attempts=ASYNC_RETRIES,
                max_event_age=ASYNC_MAX_AGE,
            )
            if snap_start
            else self.function
        )
        for statement in statements:
            self.role.add_to_policy(statement)
        self.log_group.grant_write(self.role)
        self.alarms = StepAlarms(self, "Alarms", stage=stage, function=self.function, topic=topic)
        nag.suppress(self.role, "IAM5", nag.XRAY_REASON, applies_to=["Resource::*"])
        nag.suppress(self.function, "L1", nag.RUNTIME_REASON)
