"""`chatguard doctor`: one real message through the deployed chat, as a visitor sends it.

The other checks ask AWS about parts; this one sends a message to the site's /chat through
CloudFront, WAF, API Gateway and every step, with the steps' own roles, and reads what
happened back: the reply, the reservation the cost gate wrote and the reconcile settled,
and the run's X-Ray trace (one annotated segment per step, ops/traces.py).

The message is marked so that it can be told apart later: its text starts with
``MESSAGE_MARK``, and doctor writes ``probe = "chatguard doctor"`` on its reservation item
(``RES#<request id>``) with the operator's credentials. No request can set that attribute
(the steps write only their own fields), so the ledger's mark cannot be forged by a
visitor; ``chatguard spend`` still counts the message, which was billed like any other.

The request id is API Gateway's: the execution's input carries ``$context.requestId``
(infra/vtl.py), and API Gateway returns it in the ``x-amzn-RequestId`` response header; the
trace id comes back in ``X-Amzn-Trace-Id`` because the stage has X-Ray tracing on
(https://docs.aws.amazon.com/xray/latest/devguide/xray-services-apigateway.html).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ops.http import Reply
from steps.lib.money.ledger_items import reservation_key

from .result import Check, aws_said, cannot_test, failed, passed

NAME = "a real message goes through every step"
MESSAGE_MARK = "[chatguard doctor]"
QUESTION = f"{MESSAGE_MARK} What is this site about?"
PROBE_ATTRIBUTE = "probe"
PROBE_VALUE = "chatguard doctor"
# The steps a message the model answers passes, in order (the trace must show each).
ANSWER_PATH = ("OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile")
TRACE_POLLS = 10
TRACE_POLL_SECONDS = 3.0  # X-Ray shows a trace within seconds of its end


def payload() -> dict[str, Any]:
    return {"message": QUESTION, "page": "/"}


def mark_reservation(dynamodb: Any, table: str, request_id: str) -> dict[str, Any] | None:
    """Write the probe mark on the message's reservation; its item after, None if absent."""
    from botocore.exceptions import ClientError

    try:
        answer = dynamodb.update_item(
            TableName=table,
            Key=reservation_key(request_id),
            UpdateExpression="SET #probe = :probe",
            ConditionExpression="attribute_exists(pk)",  # never create an item
            ExpressionAttributeNames={"#probe": PROBE_ATTRIBUTE},
            ExpressionAttributeValues={":probe": {"S": PROBE_VALUE}},
            ReturnValues="ALL_NEW",
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return None
        raise
    return dict(answer.get("Attributes", {}))


def trace_root(headers: Mapping[str, str]) -> str | None:
    """``Root=1-...;Parent=...`` -> ``1-...``."""
    for part in headers.get("x-amzn-trace-id", "").split(";"):
        key, _, value = part.partition("=")
        if key.strip() == "Root" and value:
            return value.strip()
    return None


def step_decisions(xray: Any, trace_id: str, sleep: Callable[[float], None]) -> dict[str, str]:
    """{step: decision} from the trace's annotated segments, once X-Ray has the trace."""
    import json

    found: dict[str, str] = {}
    for _ in range(TRACE_POLLS):
        traces = xray.batch_get_traces(TraceIds=[trace_id]).get("Traces", [])
        if traces:
            found = {}
            for segment in traces[0].get("Segments", []):
                _collect(json.loads(segment["Document"]), found)
            if all(step in found for step in ANSWER_PATH):
                return found
        sleep(TRACE_POLL_SECONDS)
    return found


def _collect(doc: Mapping[str, Any], found: dict[str, str]) -> None:
    annotations = doc.get("annotations") or {}
    if "step" in annotations:
        found[str(annotations["step"])] = str(annotations.get("decision", ""))
    for child in doc.get("subsegments", []):
        _collect(child, found)


def answer_verdict(reply: Reply) -> Check | None:
    """A FAIL or CANNOT TEST when the answer itself settles the check; None to read on."""
    body = reply.body or {}
    if reply.status != 200:
        return failed(
            NAME,
            f"the chat answered {reply.status}: {reply.error or 'no JSON body'}",
            "read the trace (chatguard traces --since 15m) and the failing step's log",
        )
    if body.get("limited") or body.get("degraded"):
        why = (
            "limited (this address used its messages today)"
            if body.get("limited")
            else "degraded (mode not normal, or a ceiling reached)"
        )
        return cannot_test(
            NAME,
            f"the chat answered {why}: no model call",
            "run doctor again tomorrow, or chatguard mode normal",
        )
    if not reply.headers.get("x-amzn-requestid"):
        return cannot_test(
            NAME,
            "the answer carried no x-amzn-RequestId",
            "check that CloudFront forwards API Gateway's response headers",
        )
    return None


def ledger_verdict(dynamodb: Any, table: str, request_id: str) -> Check | None:
    """Mark the message's reservation; a verdict when it is missing or not settled."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        item = mark_reservation(dynamodb, table, request_id)
    except (ClientError, BotoCoreError) as exc:
        return cannot_test(
            NAME,
            f"request {request_id}: {aws_said(exc)}",
            "let your identity call dynamodb:UpdateItem on the table",
        )
    if item is None:
        return cannot_test(
            NAME,
            f"request {request_id} answered from the model, but no reservation RES#{request_id}",
            "compare x-amzn-RequestId with the execution's requestId (infra/vtl.py)",
        )
    status = item.get("status", {}).get("S", "")
    if status != "settled":
        return failed(
            NAME,
            f"request {request_id}: its reservation is {status or 'unknown'}, not settled",
            "read the Reconcile step's log for this request id",
        )
    return None


def one_real_message(
    send: Callable[[], Reply],
    *,
    dynamodb: Any,
    table: str,
    xray: Any,
    sleep: Callable[[float], None] = time.sleep,
) -> Check:
    reply = send()
    verdict = answer_verdict(reply)
    if verdict is not None:
        return verdict
    request_id = reply.headers["x-amzn-requestid"]
    verdict = ledger_verdict(dynamodb, table, request_id)
    if verdict is not None:
        return verdict
    root = trace_root(reply.headers)
    decisions = step_decisions(xray, root, sleep) if root else {}
    missing = [step for step in ANSWER_PATH if step not in decisions]
    if missing:
        return cannot_test(
            NAME,
            f"request {request_id} answered and settled; its trace lacks {', '.join(missing)}",
            "run chatguard traces --since 15m once X-Ray has the trace",
        )
    path = ", ".join(f"{step} {decisions[step]}" for step in ANSWER_PATH)
    return passed(NAME, f"request {request_id} (marked in the ledger): {path}")
