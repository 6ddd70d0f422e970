"""Can every alarm of a synthesized template reach its topic? Walk alarm -> action -> topic
-> topic policy and say, for each action, why CloudWatch could not publish.

A topic without an ``AWS::SNS::TopicPolicy`` keeps SNS's default policy, which lets the
account's own services publish. A topic WITH one (``enforce_ssl`` adds one) allows only what
its statements allow: CloudWatch then needs an Allow for ``cloudwatch.amazonaws.com`` on
``sns:Publish`` whose conditions the alarm meets, and no Deny that applies to it
(https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger).

Conditions are evaluated for a request from one of this account's alarms in the stack's
Region, sent over TLS (CloudWatch always does), carrying only the context keys AWS shows
CloudWatch's publish being matched on: ``aws:SourceArn``, the alarm's ARN (the example
policies of the knowledge center page above and of
https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html). No page we
found says CloudWatch sends ``aws:SourceAccount``: a condition on it, like any condition
this module cannot evaluate, counts against delivery. The check errs towards "cannot
publish", never towards silence.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, Mapping
from typing import Any

SERVICE = "cloudwatch.amazonaws.com"
# The pseudo parameters of the account the check imagines; any values would do, as long
# as the alarm's ARN and the policy are rendered with the same ones.
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}


def undeliverable(template: Mapping[str, Any]) -> list[str]:
    """One line per alarm action CloudWatch could not publish; empty when all can."""
    resources: Mapping[str, Any] = template.get("Resources", {})
    policies = _policies_by_topic(resources)
    problems = []
    for name, alarm in resources.items():
        if alarm.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        props = alarm.get("Properties", {})
        source = _alarm_arn(props.get("AlarmName") or name)
        for key in ("AlarmActions", "OKActions", "InsufficientDataActions"):
            for action in props.get(key, []):
                topic = _topic_of(action, resources)
                if topic is None:
                    continue  # not an SNS topic of this template (an Auto Scaling action...)
                reason = _refusal(policies.get(topic), topic, source)
                if reason:
                    problems.append(f"{name} {key} -> {topic}: {reason}")
    return problems


def _policies_by_topic(resources: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in resources.values():
        if resource.get("Type") != "AWS::SNS::TopicPolicy":
            continue
        props = resource.get("Properties", {})
        statements = props.get("PolicyDocument", {}).get("Statement", [])
        for topic in props.get("Topics", []):
            if isinstance(topic, dict) and "Ref" in topic:
                found.setdefault(topic["Ref"], []).extend(_listed(statements))
    return found


def _topic_of(action: object, resources: Mapping[str, Any]) -> str | None:
    if isinstance(action, dict) and isinstance(action.get("Ref"), str):
        ref = action["Ref"]
        if resources.get(ref, {}).get("Type") == "AWS::SNS::Topic":
            return str(ref)
    return None


def _alarm_arn(name: object) -> str:
    alarm = _render(name) or "alarm-named-by-cloudformation"
    return f"arn:aws:cloudwatch:{PSEUDO['AWS::Region']}:{PSEUDO['AWS::AccountId']}:alarm:{alarm}"


def _refusal(statements: list[dict[str, Any]] | None, topic: str, source: str) -> str | None:
    if statements is None:
        return None  # SNS's default policy: the account's own alarms may publish
    applying = [s for s in statements if _applies(s, topic, source)]
    if any(s.get("Effect") == "Deny" for s in applying):
        return "a Deny statement of the topic policy applies to CloudWatch"
    if not any(s.get("Effect") == "Allow" for s in applying):
        return f"no statement of the topic policy allows {SERVICE} to sns:Publish"
    return None


def _applies(statement: Mapping[str, Any], topic: str, source: str) -> bool:
    actions = [str(a).lower() for a in _listed(statement.get("Action"))]
    if not any(fnmatch.fnmatchcase("sns:publish", a) for a in actions):
        return False
    if not _names_cloudwatch(statement.get("Principal")):
        return False
    resources = _listed(statement.get("Resource"))
    if not any(r == "*" or r == {"Ref": topic} for r in resources):
        return False
    met = _conditions_met(statement.get("Condition", {}), source)
    # An unknown condition: a Deny is assumed to apply, an Allow assumed not to.
    return met if met is not None else statement.get("Effect") == "Deny"


def _names_cloudwatch(principal: object) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, dict):
        return "*" in _listed(principal.get("AWS")) or SERVICE in _listed(principal.get("Service"))
    return False


def _conditions_met(conditions: Mapping[str, Any], source: str) -> bool | None:
    """True or False for the request of an alarm; None when a condition is not understood."""
    context = {  # what an alarm's publish is documented to carry (module docstring)
        "aws:sourcearn": source,
        "aws:securetransport": "true",
    }
    for operator, block in conditions.items():
        for key, wanted in block.items():
            actual = context.get(key.lower())
            values = [_render(v) for v in _listed(wanted)]
            if actual is None or None in values:
                return None
            test = _OPERATORS.get(operator)
            if test is None:
                return None
            if not any(test(actual, str(v)) for v in values):
                return False
    return True


_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda actual, wanted: actual == wanted,
    "ArnEquals": lambda actual, wanted: actual == wanted,
    "StringLike": fnmatch.fnmatchcase,
    "ArnLike": fnmatch.fnmatchcase,
    "Bool": lambda actual, wanted: actual == wanted.lower(),
}


def _render(value: object) -> str | None:
    """A string, a pseudo parameter, or an Fn::Join of those; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("Ref") in PSEUDO:
        return PSEUDO[value["Ref"]]
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        rendered = [_render(p) for p in parts]
        return None if None in rendered else str(separator).join(r or "" for r in rendered)
    return None


def _listed(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else ([] if value is None else [value])


def alarms(template: Mapping[str, Any]) -> Iterator[str]:
    """The template's alarms that have at least one action (a check on nothing proves nothing)."""
    for name, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::CloudWatch::Alarm" and resource.get("Properties", {}).get(
            "AlarmActions"
        ):
            yield name
