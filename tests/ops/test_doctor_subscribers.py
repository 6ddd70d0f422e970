"""doctor's subscriber check on stubbed accounts: a confirmed subscription passes; a topic
with only a pending one, or none, fails (CloudWatch's "Successfully executed action" alone
would have passed both)."""

from __future__ import annotations

from botocore.stub import Stubber

from ops.doctor import subscribers as doctor_subscribers

from . import doctor_accounts as acct

NAME = "a person is subscribed to the alert topic"


def subscription(arn: str, protocol: str = "email") -> dict[str, str]:
    return {
        "SubscriptionArn": arn,
        "Owner": acct.ACCOUNT,
        "Protocol": protocol,
        "Endpoint": "ops@example.com",
        "TopicArn": acct.TOPIC,
    }


CONFIRMED = subscription(f"{acct.TOPIC}:0a1b2c3d-4e5f-6789-abcd-ef0123456789")
PENDING = subscription("PendingConfirmation")


def check_with(*pages: list[dict[str, str]]):
    sns = acct.client("sns")
    with Stubber(sns) as stub:
        for i, page in enumerate(pages):
            expected = {"TopicArn": acct.TOPIC} | ({"NextToken": f"t{i}"} if i else {})
            answer = {"Subscriptions": page} | (
                {"NextToken": f"t{i + 1}"} if i + 1 < len(pages) else {}
            )
            stub.add_response("list_subscriptions_by_topic", answer, expected)
        check = doctor_subscribers.topic_tells_a_person(sns, acct.TOPIC, name=NAME)
        stub.assert_no_pending_responses()
    return check


def test_a_confirmed_subscription_passes() -> None:
    check = check_with([CONFIRMED, PENDING])
    assert check.outcome == "PASS"
    assert check.detail == "1 confirmed subscription(s) (email), 1 still pending"


def test_a_confirmed_subscription_on_a_later_page_passes() -> None:
    assert check_with([PENDING], [CONFIRMED]).outcome == "PASS"


def test_only_a_pending_subscription_fails() -> None:
    check = check_with([PENDING])
    assert check.outcome == "FAIL"
    assert "pending confirmation" in check.detail
    assert check.fix == doctor_subscribers.FIX_PENDING


def test_no_subscription_fails_with_alert_emails_as_the_fix() -> None:
    check = check_with([])
    assert check.outcome == "FAIL" and "alert_emails" in check.fix


def test_a_deleted_subscription_is_not_a_person() -> None:
    assert check_with([subscription("Deleted")]).outcome == "FAIL"
