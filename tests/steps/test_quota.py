"""S2, quota: the visitor's daily message count, with the wire shapes of
docs/internals.md."""

from __future__ import annotations

from typing import Any

from steps import quota


def run_quota(address: str = "203.0.113.7:51234", request_id: str = "r1") -> dict[str, Any]:
    return quota.handler({"requestId": request_id, "viewerAddress": address}, None)


def test_quota_allows_and_returns_visitor_and_day(aws):
    out = run_quota()
    assert out["decision"] == "allowed"
    assert len(out["visitor"]) == 16 and len(out["day"]) == 10
    item = aws.item(f"VISITOR#{out['visitor']}", out["day"])
    assert item["msgCount"]["N"] == "1"


def test_quota_refuses_the_message_after_the_limit(aws, monkeypatch):
    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "3")
    decisions = [run_quota(request_id=f"r{i}")["decision"] for i in range(4)]
    assert decisions == ["allowed", "allowed", "allowed", "limited"]
    out = run_quota()
    assert out["response"]["statusCode"] == 200
    assert out["response"]["body"]["limited"] is True
    assert out["response"]["body"]["reply"]


def test_quota_never_stores_the_ip(aws):
    out = run_quota("203.0.113.7:51234")
    dump = str(aws.dynamodb.scan(TableName=aws.table)["Items"])
    assert "203.0.113" not in dump
    assert out["visitor"] in dump
