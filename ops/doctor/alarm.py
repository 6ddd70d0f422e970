"""`chatguard doctor`: does a CloudWatch alarm of the stack actually reach its SNS topic?

A topic's resource policy replaces SNS's default one, and an alarm whose topic policy does
not let CloudWatch publish fails silently: the only trace is a "Failed to execute action"
item in the alarm's history (AWS knowledge center, "Why didn't I receive an SNS
notification for my CloudWatch alarm trigger?", KNOWLEDGE_CENTER below). No template check
can see what the account does, so this drives one real alarm: SetAlarmState to ALARM
("temporarily sets the state of an alarm for testing purposes": the ALARM action runs when
the state changes), reads the alarm's Action history, and puts the state back. Subscribers
get one e-mail that says it is a test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from .result import Check, aws_said, cannot_test, failed, passed

KNOWLEDGE_CENTER = "https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger"
REASON = "chatguard doctor: a test of this alarm's action, not an incident"
RESTORE = "chatguard doctor: test over, back to the state before it"
POLL_SECONDS = 3.0
WAIT_SECONDS = 60.0  # an action shows in the history within seconds; leave a margin


def pick_alarm(alarms: Sequence[dict[str, Any]], topic_arn: str | None) -> dict[str, Any] | None:
    """An alarm whose ALARM action publishes to SNS and whose state can change to ALARM
    (one already in ALARM would not run its action again); the stack's topic first."""
    usable = [
        a
        for a in alarms
        if a.get("ActionsEnabled", True)
        and a.get("StateValue") != "ALARM"
        and any(":sns:" in action for action in a.get("AlarmActions", []))
    ]
    usable.sort(key=lambda a: topic_arn not in a.get("AlarmActions", []))
    return usable[0] if usable else None


def action_verdict(name: str, alarm: str, items: Sequence[dict[str, Any]]) -> Check:
    """PASS on a successful action, FAIL on any failed one, CANNOT TEST on none yet."""
    failures = [i for i in items if "Failed to execute action" in i.get("HistorySummary", "")]
    if failures:
        return failed(
            name,
            f"alarm {alarm}: {failures[0]['HistorySummary']}",
            "let cloudwatch.amazonaws.com publish to the topic (topic policy, ArnLike on"
            f" aws:SourceArn as AWS's example), then deploy: {KNOWLEDGE_CENTER}",
        )
    if items:
        return passed(name, f"alarm {alarm}: {items[0].get('HistorySummary', 'action ran')}")
    return cannot_test(
        name,
        f"alarm {alarm} was set to ALARM, but no action showed in its history within "
        f"{WAIT_SECONDS:.0f} s",
        f"run doctor again; if it persists, read the alarm's history ({KNOWLEDGE_CENTER})",
    )


def alarm_reaches_topic(
    cloudwatch: Any,
    alarm_names: Sequence[str],
    *,
    name: str,
    topic_arn: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Check:
    if not alarm_names:
        return cannot_test(name, "the stack has no CloudWatch alarm", "deploy the stack")
    alarms = _describe(cloudwatch, alarm_names)
    chosen = pick_alarm(alarms, topic_arn)
    if chosen is None:
        return cannot_test(
            name,
            "every alarm of the stack is in ALARM or has no SNS action enabled",
            "run doctor again once an alarm is back to OK",
        )
    from botocore.exceptions import BotoCoreError, ClientError

    alarm = chosen["AlarmName"]
    # Anything after the alarm's last state change was caused by our change (AWS's own
    # clock, so the local clock's skew cannot mix an old action in).
    since: datetime = chosen["StateUpdatedTimestamp"]
    cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="ALARM", StateReason=REASON)
    try:
        items = _actions_after(cloudwatch, alarm, since, sleep)
    except (ClientError, BotoCoreError) as exc:  # the state is restored below all the same
        return cannot_test(name, f"alarm {alarm}: {aws_said(exc)}", "allow DescribeAlarmHistory")
    finally:
        cloudwatch.set_alarm_state(
            AlarmName=alarm, StateValue=chosen["StateValue"], StateReason=RESTORE
        )
    return action_verdict(name, alarm, items)


def _describe(cloudwatch: Any, alarm_names: Sequence[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    names = list(alarm_names)
    for start in range(0, len(names), 100):  # DescribeAlarms takes at most 100 names
        kwargs: dict[str, Any] = {"AlarmNames": names[start : start + 100]}
        while True:  # and answers at most 50 alarms a page by default
            page = cloudwatch.describe_alarms(**kwargs)
            found += page.get("MetricAlarms", [])
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    return found


def _actions_after(
    cloudwatch: Any, alarm: str, since: datetime, sleep: Callable[[float], None]
) -> list[dict[str, Any]]:
    """The alarm's Action history items after ``since``, newest first, once any shows."""
    waited = 0.0
    while True:
        history = cloudwatch.describe_alarm_history(
            AlarmName=alarm, HistoryItemType="Action", StartDate=since, ScanBy="TimestampDescending"
        )
        items = [i for i in history.get("AlarmHistoryItems", []) if i["Timestamp"] > since]
        if items or waited >= WAIT_SECONDS:
            return items
        sleep(POLL_SECONDS)
        waited += POLL_SECONDS
