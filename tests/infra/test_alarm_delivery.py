"""Every alarm of both synthesized stacks can publish to its topic (infra/alarm_delivery.py),
and the walk does see a topic policy that shuts CloudWatch out: the policy of the alert
topic before the CloudWatch statement (only Budgets allowed) fails it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aws_cdk import App, Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from infra import alarm_delivery
from infra.blocks.alert_topic import AlertTopic

pytestmark = pytest.mark.infra


@pytest.mark.parametrize("stack", ["chat", "edge"])
def test_every_alarm_action_of_the_deployed_stacks_can_publish(synth, stack: str) -> None:
    template = synth.chat_json if stack == "chat" else synth.edge_json
    assert list(alarm_delivery.alarms(template))  # not vacuous: there are alarms to walk
    assert alarm_delivery.undeliverable(template) == []


def _stack_with_alarm(make_topic: Any) -> dict[str, Any]:
    stack = Stack(App(), "Probe")
    topic = make_topic(stack)
    metric = cloudwatch.Metric(namespace="Probe", metric_name="Errors", period=Duration.minutes(1))
    alarm = metric.create_alarm(stack, "Alarm", threshold=1, evaluation_periods=1)
    alarm.add_alarm_action(actions.SnsAction(topic))
    return dict(Template.from_stack(stack).to_json())


def _budgets_only(stack: Stack) -> sns.Topic:
    # The alert topic as it was: enforce_ssl's policy plus the Budgets statement, nothing
    # for CloudWatch.
    topic = sns.Topic(stack, "Topic", enforce_ssl=True)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            actions=["sns:Publish"],
            principals=[iam.ServicePrincipal("budgets.amazonaws.com")],
            resources=[topic.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        )
    )
    return topic


def test_a_topic_policy_that_allows_only_budgets_fails_the_walk() -> None:
    (problem,) = alarm_delivery.undeliverable(_stack_with_alarm(_budgets_only))
    assert "no statement of the topic policy allows cloudwatch.amazonaws.com" in problem


def test_the_alert_topic_passes_the_walk() -> None:
    template = _stack_with_alarm(
        lambda stack: AlertTopic(stack, "Alerts", emails=[], allow_budgets=True).topic
    )
    assert alarm_delivery.undeliverable(template) == []


def test_a_topic_without_a_policy_keeps_the_default_and_passes() -> None:
    template = _stack_with_alarm(lambda stack: sns.Topic(stack, "Topic"))
    assert alarm_delivery.undeliverable(template) == []


def _cloudwatch_statement(template: dict[str, Any]) -> dict[str, Any]:
    (policy,) = (r for r in template["Resources"].values() if r["Type"] == "AWS::SNS::TopicPolicy")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (statement,) = (s for s in statements if s.get("Sid") == "CloudWatchAlarmsPublish")
    return dict(statement)


def _alert_topic_template() -> dict[str, Any]:
    return _stack_with_alarm(
        lambda stack: AlertTopic(stack, "Alerts", emails=[], allow_budgets=False).topic
    )


def _with_cloudwatch_condition(template: dict[str, Any], condition: dict[str, Any]) -> dict:
    changed = copy.deepcopy(template)
    for resource in changed["Resources"].values():
        if resource["Type"] == "AWS::SNS::TopicPolicy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if statement.get("Sid") == "CloudWatchAlarmsPublish":
                    statement["Condition"] = condition
    return changed


def test_the_cloudwatch_statement_is_the_documented_one_limited_to_this_accounts_alarms():
    # As AWS's example: ArnLike on aws:SourceArn alone, the account and Region in the ARN.
    statement = _cloudwatch_statement(_alert_topic_template())
    (operator,) = statement["Condition"]
    (key,) = statement["Condition"][operator]
    assert (operator, key) == ("ArnLike", "aws:SourceArn")
    arn = alarm_delivery._render(statement["Condition"]["ArnLike"]["aws:SourceArn"])
    assert arn == "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:*"


def test_the_old_source_account_condition_fails_the_walk() -> None:
    # What the topic had: aws:SourceAccount beside aws:SourceArn. No AWS page shows
    # CloudWatch sending it; if it does not, the Allow never applies and no alarm arrives.
    template = _alert_topic_template()
    documented = _cloudwatch_statement(template)["Condition"]
    account = {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    old = _with_cloudwatch_condition(template, {**documented, **account})
    assert alarm_delivery.undeliverable(template) == []
    (problem,) = alarm_delivery.undeliverable(old)
    assert "no statement of the topic policy allows" in problem


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:SourceAccount": "999999999999"}},  # another account
        {"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:us-west-2:*:alarm:*"}},  # Region
        {"ArnLike": {"aws:SourceArn": "arn:aws:events:*"}},  # another service's sources
        {"StringEquals": {"aws:PrincipalOrgID": "o-1"}},  # a key the walk cannot evaluate
    ],
)
def test_a_condition_the_alarm_does_not_meet_fails_the_walk(condition: dict[str, Any]) -> None:
    template = _alert_topic_template()
    broken = _with_cloudwatch_condition(template, condition)
    assert alarm_delivery.undeliverable(template) == []
    assert len(alarm_delivery.undeliverable(broken)) == 1


def test_a_deny_that_applies_to_cloudwatch_fails_the_walk() -> None:
    template = _alert_topic_template()
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::SNS::TopicPolicy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            deny = next(s for s in statements if s["Effect"] == "Deny")
            deny["Condition"] = {"Bool": {"aws:SecureTransport": "true"}}  # TLS is denied
    (problem,) = alarm_delivery.undeliverable(template)
    assert "Deny" in problem
