"""The Express state machine: statemachine/chat.asl.json as written, plus TimeoutSeconds."""

from __future__ import annotations

import json
from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import nag
from statemachine import loader
from steps.lib.runtime.stages import STAGES

from .alarms import FIVE_MINUTES, alarm


class ChatWorkflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        timeout: Duration,
        log_retention: logs.RetentionDays,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        # The vendedlogs prefix keeps CloudWatch's resource policy small for Step Functions.
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/vendedlogs/states/{Stack.of(self).stack_name}-workflow",
            retention=log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # CDK ignores `timeout` for a string definition (aws-cdk#37150): without TimeoutSeconds
        # in the ASL an Express execution may run for 5 minutes, long after API Gateway gave up.
        definition = json.loads(loader.definition_text())
        definition["TimeoutSeconds"] = int(timeout.to_seconds())
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=sfn.StateMachineType.EXPRESS,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(definition, indent=2)),
            definition_substitutions={
                stage.placeholder: functions[stage.state].function_arn for stage in STAGES
            },
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                # Execution data is the visitor's message and the model's answer: user content
                # stays out of the logs; states, transitions and errors are still recorded.
                include_execution_data=False,
            ),
        )
        # A definition given as a string is opaque to CDK, so every invoke is granted here.
        for stage in STAGES:
            functions[stage.state].grant_invoke(self.state_machine)
        self._alarms(topic)
        nag.suppress(
            self.state_machine.role,
            "IAM5",
            nag.INVOKE_VERSIONS_REASON + " " + nag.XRAY_REASON + " " + nag.VENDED_LOGS_REASON,
            applies_to=["Resource::*", nag.regex(r"^Resource::<.*Function.*\.Arn>:\*$")],
        )

    def _alarms(self, topic: sns.ITopic) -> None:
        # Only the run's timeout: every Task catches States.ALL into a reply, so a failing
        # step ends a SUCCEEDED run with a 503 body, never an ExecutionsFailed count. Those
        # replies are alarmed where they happen: the steps' FailClosed and ReservationOpen
        # metrics and each step's Errors and Throttles (tests/infra/test_alarms_can_fire.py).
        # A timed-out run is answered 503 by the response template, and no step sees it.
        alarm(
            self,
            "ExecutionsTimedOut",
            metric=self.state_machine.metric_timed_out(period=FIVE_MINUTES),
            threshold=1,
            description="The chat workflow timed out: the visitor got a 503.",
            topic=topic,
        )
