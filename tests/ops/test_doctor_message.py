"""doctor's real message on stubbed accounts: answered, reserved, settled, marked in the
ledger and traced through every step passes; a fail-closed 503, a reservation left open or
a message that never reached the model does not."""

from __future__ import annotations

import json
from typing import Any

from botocore.stub import Stubber

from ops.doctor import message as dm
from ops.http import Reply

from . import doctor_accounts as acct

TABLE = "ChatguardChat-LedgerTable-XYZ"
REQUEST = "c0ffee00-1234-5678-9abc-def012345678"
TRACE = "1-67890abc-0123456789abcdef01234567"
HEADERS = {
    "x-amzn-requestid": REQUEST,
    "x-amzn-trace-id": f"Root={TRACE};Parent=53995c3f;Sampled=1",
}
ANSWER = Reply(200, {"reply": "A blog about AWS.", "sources": [], "sig": "s" * 43}, HEADERS)
DECISIONS = {
    "OriginVerify": "allowed", "Quota": "allowed", "CostGate": "reserved",
    "Retrieve": "retrieved", "Invoke": "answered", "Reconcile": "settled",
}  # fmt: skip


def trace(decisions: dict[str, str]) -> dict[str, Any]:
    subsegments = [
        {"name": step, "id": f"{i:016x}", "annotations": {"step": step, "decision": d}}
        for i, (step, d) in enumerate(decisions.items())
    ]
    document = {"name": "chatguard", "id": "a" * 16, "subsegments": subsegments}
    segment = {"Id": "a" * 16, "Document": json.dumps(document)}
    return {"Traces": [{"Id": TRACE, "Segments": [segment]}]}


def reservation(status: str) -> dict[str, Any]:
    return {
        "Attributes": {
            "pk": {"S": f"RES#{REQUEST}"},
            "sk": {"S": "RES"},
            "status": {"S": status},
            dm.PROBE_ATTRIBUTE: {"S": dm.PROBE_VALUE},
        }
    }


def run(reply: Reply, *, status: str | None = "settled", traces: list[dict] | None = None):
    dynamodb, xray = acct.client("dynamodb"), acct.client("xray")
    sent: list[dict[str, Any]] = []
    with Stubber(dynamodb) as db, Stubber(xray) as xr:
        if status is not None:
            db.add_response(
                "update_item",
                reservation(status),
                {
                    "TableName": TABLE,
                    "Key": {"pk": {"S": f"RES#{REQUEST}"}, "sk": {"S": "RES"}},
                    "UpdateExpression": "SET #probe = :probe",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#probe": "probe"},
                    "ExpressionAttributeValues": {":probe": {"S": "chatguard doctor"}},
                    "ReturnValues": "ALL_NEW",
                },
            )
        for answer in traces or []:
            xr.add_response("batch_get_traces", answer, {"TraceIds": [TRACE]})

        def send() -> Reply:
            sent.append(dm.payload())
            return reply

        check = dm.one_real_message(
            send, dynamodb=dynamodb, table=TABLE, xray=xray, sleep=lambda s: None
        )
        db.assert_no_pending_responses()
        xr.assert_no_pending_responses()
    return check, sent


def test_a_message_answered_settled_marked_and_traced_passes() -> None:
    check, sent = run(ANSWER, traces=[{"Traces": []}, trace(DECISIONS)])
    assert check.outcome == "PASS", check
    assert f"request {REQUEST} (marked in the ledger)" in check.detail
    assert "Invoke answered" in check.detail and "Reconcile settled" in check.detail
    assert sent == [{"message": dm.QUESTION, "page": "/"}]
    assert sent[0]["message"].startswith(dm.MESSAGE_MARK)


def test_a_fail_closed_503_fails_without_touching_the_ledger() -> None:
    closed = Reply(503, {"error": "The chat is unavailable right now."}, HEADERS)
    check, _ = run(closed, status=None)
    assert check.outcome == "FAIL" and "503: The chat is unavailable" in check.detail


def test_a_reservation_left_open_fails() -> None:
    check, _ = run(ANSWER, status="open")
    assert check.outcome == "FAIL" and "open, not settled" in check.detail


def test_a_limited_or_degraded_answer_cannot_test_the_model_path() -> None:
    for body in ({"reply": "x", "limited": True}, {"reply": "x", "degraded": True, "sources": []}):
        check, _ = run(Reply(200, body, HEADERS), status=None)
        assert check.outcome == "CANNOT TEST" and "no model call" in check.detail


def test_a_trace_missing_a_step_cannot_pass() -> None:
    partial = {k: v for k, v in DECISIONS.items() if k != "Reconcile"}
    check, _ = run(ANSWER, traces=[trace(partial)] * dm.TRACE_POLLS)
    assert check.outcome == "CANNOT TEST" and "lacks Reconcile" in check.detail


def test_no_reservation_under_the_request_id_is_said() -> None:
    dynamodb = acct.client("dynamodb")
    with Stubber(dynamodb) as db:
        db.add_client_error("update_item", "ConditionalCheckFailedException", "no item")
        check = dm.one_real_message(
            lambda: ANSWER, dynamodb=dynamodb, table=TABLE, xray=None, sleep=lambda s: None
        )
    assert check.outcome == "CANNOT TEST" and f"no reservation RES#{REQUEST}" in check.detail


def test_the_trace_root_is_read_from_the_header() -> None:
    assert dm.trace_root(HEADERS) == TRACE
    assert dm.trace_root({}) is None
