"""The alarms of one pipeline step: errors, throttles and p99 duration near the timeout."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from steps.lib.runtime.stages import Stage

from .alarms import FIVE_MINUTES, alarm

# p99 above this share of the timeout means the step is about to start timing out.
DURATION_ALARM_SHARE = 0.8


class StepAlarms(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: Stage,
        function: lambda_.IFunction,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        name = f"{stage.key} {stage.state}"
        self.errors = alarm(
            self,
            "Errors",
            metric=function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            description=f"{name}: the Lambda raised (failed closed, or a reservation stands).",
            topic=topic,
        )
        self.throttles = alarm(
            self,
            "Throttles",
            metric=function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            description=f"{name}: invocations were throttled (concurrency limit reached).",
            topic=topic,
        )
        limit_ms = stage.timeout_seconds * 1000 * DURATION_ALARM_SHARE
        self.duration = alarm(
            self,
            "DurationP99",
            metric=function.metric_duration(period=FIVE_MINUTES, statistic="p99"),
            threshold=limit_ms,
            periods=3,
            description=f"{name}: p99 duration above {DURATION_ALARM_SHARE:.0%} of its timeout.",
            topic=topic,
        )
        self.all: tuple[cw.Alarm, ...] = (self.errors, self.throttles, self.duration)
