"""Alarm helpers: every alarm goes to the one alert topic and treats silence as healthy."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

FIVE_MINUTES = Duration.minutes(5)


def alarm(
    scope: Construct,
    construct_id: str,
    *,
    metric: cw.IMetric,
    threshold: float,
    description: str,
    topic: sns.ITopic,
    periods: int = 1,
) -> cw.Alarm:
    """Alarm when ``metric >= threshold`` in ``periods`` consecutive periods."""
    created = cw.Alarm(
        scope,
        construct_id,
        metric=metric,
        threshold=threshold,
        evaluation_periods=periods,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        # No data means no traffic (or no failures): an idle site must not page anyone.
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    created.add_alarm_action(actions.SnsAction(topic))
    return created
