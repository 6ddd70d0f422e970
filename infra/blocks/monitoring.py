"""Alarms on the funnel's decisions and the dashboard with one row per stage.

Decision metrics are the EMF metrics of steps/lib/runtime/observability.py (namespace and service
dimension imported from there, so a rename cannot silently orphan an alarm).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import OpsConfig
from steps.lib.runtime.observability import NAMESPACE, SERVICE
from steps.lib.runtime.settings import Settings

from .alarms import FIVE_MINUTES, alarm
from .pipeline_step import PipelineStep

# The decision metrics shown on each stage's row.
STAGE_METRICS = {
    "OriginVerify": ("OriginRejected",),
    "Quota": ("QuotaLimited",),
    "CostGate": ("Degraded",),
    "Retrieve": (),
    "Invoke": ("ModelCalls",),
    "Reconcile": ("CostMicros", "ReservationOpen"),
    "Degraded": ("Degraded",),
}


def decision_metric(name: str, period: Duration = FIVE_MINUTES) -> cw.Metric:
    return cw.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": SERVICE},
        statistic="Sum",
        period=period,
    )


class ChatMonitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        steps: Sequence[PipelineStep],
        state_machine: sfn.StateMachine,
        api: apigw.RestApi,
        settings: Settings,
        ops: OpsConfig,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        hourly_spend = int(settings.daily_ceiling_micros * ops.hourly_spend_alarm_share)
        for name, metric, threshold, text in (
            (
                "OriginRejectedSpike",
                decision_metric("OriginRejected"),
                ops.origin_rejected_alarm_threshold,
                "Many requests without a valid origin header: someone is calling the API directly.",
            ),
            (
                "FailClosed",
                decision_metric("FailClosed"),
                1,
                "A step failed closed (DynamoDB, SSM, the index or a bug): visitors got a 503.",
            ),
            (
                "DegradedAnswers",
                decision_metric("Degraded"),
                ops.degraded_alarm_threshold,
                "Visitors get degraded answers: a ceiling tripped or the mode is not normal.",
            ),
            (
                "ReservationOpen",
                decision_metric("ReservationOpen"),
                1,
                "A reservation could not be settled: spend is over-counted until its day ends.",
            ),
            (
                "HourlySpend",
                decision_metric("CostMicros", Duration.hours(1)),
                hourly_spend,
                f"Spend in one hour reached {ops.hourly_spend_alarm_share} of the daily ceiling.",
            ),
        ):
            alarm(self, name, metric=metric, threshold=threshold, description=text, topic=topic)
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(24))
        self.dashboard.add_widgets(*self._edge_row(api, state_machine))
        for step in steps:
            self.dashboard.add_widgets(*self._stage_row(step))

    @staticmethod
    def _edge_row(api: apigw.RestApi, machine: sfn.StateMachine) -> list[cw.IWidget]:
        return [
            cw.GraphWidget(
                title="API: requests and errors",
                left=[api.metric_count(), api.metric_client_error(), api.metric_server_error()],
                width=12,
            ),
            cw.GraphWidget(
                title="Workflow: executions",
                left=[
                    machine.metric_succeeded(),
                    machine.metric_failed(),
                    machine.metric_timed_out(),
                    machine.metric_throttled(),
                ],
                width=12,
            ),
        ]

    @staticmethod
    def _stage_row(step: PipelineStep) -> list[cw.IWidget]:
        fn = step.function
        title = f"{step.stage.key} {step.stage.state}"
        decisions = [decision_metric(m) for m in STAGE_METRICS[step.stage.state]]
        return [
            cw.GraphWidget(
                title=f"{title}: invocations, errors, throttles",
                left=[fn.metric_invocations(), fn.metric_errors(), fn.metric_throttles()],
                width=8,
            ),
            cw.GraphWidget(
                title=f"{title}: duration p50 / p99 (ms)",
                left=[fn.metric_duration(statistic="p50"), fn.metric_duration(statistic="p99")],
                width=8,
            ),
            cw.GraphWidget(title=f"{title}: decisions", left=decisions, width=8)
            if decisions
            else cw.TextWidget(markdown=f"**{title}**: no decision metric", width=8),
        ]


class EdgeMonitoring(Construct):
    """WAF metrics of a CLOUDFRONT web ACL live in us-east-1, so their alarm lives there too."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        web_acl_name: str,
        rule_name: str,
        threshold: int,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        # The rate rule counts and labels; blocks named per origin answer. Its own
        # CountedRequests is every request over the rate, whichever rule then blocked it
        # (tests/infra/test_alarms_can_fire.py checks the rule's action is Count).
        blocked = cw.Metric(
            namespace="AWS/WAFV2",
            metric_name="CountedRequests",
            dimensions_map={"WebACL": web_acl_name, "Rule": rule_name},
            statistic="Sum",
            period=FIVE_MINUTES,
        )
        self.rate_blocked = alarm(
            self,
            "RateRuleBlocked",
            metric=blocked,
            threshold=threshold,
            description="The /chat rate rule blocked many requests: a client hammers the chat.",
            topic=topic,
        )
