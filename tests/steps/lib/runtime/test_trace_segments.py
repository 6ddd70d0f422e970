"""The hand-written X-Ray subsegments: header parsing, nesting, error and fault, the wire."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from botocore.exceptions import ClientError

from steps.lib.runtime.trace_segments import HEADER, Daemon, TraceHeader, Tracer

SAMPLED = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _tracer(header: str | None = SAMPLED) -> tuple[Tracer, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    ticks = iter(range(100))
    return Tracer(sent.append, header=lambda: header, clock=lambda: float(next(ticks))), sent


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        (SAMPLED, TraceHeader("1-5759e988-bd862e3fe1be46a994272793", "53995c3f42cd8ad8", True)),
        ("Root=1-a-b;Parent=c;Sampled=0", TraceHeader("1-a-b", "c", False)),
        ("Root=1-a-b;Sampled=1", None),  # no parent: nothing to attach to
        ("", None),
        (None, None),
    ],
)
def test_the_lambda_trace_header_is_read_or_refused(raw, parsed):
    assert TraceHeader.parse(raw) == parsed


def test_a_call_inside_a_step_is_its_child_and_both_are_sent_closed():
    tracer, sent = _tracer()
    with tracer.in_subsegment("Quota") as step:
        assert step is not None
        step.put_annotation("decision", "allowed")
        assert tracer.aws_call("dynamodb", "UpdateItem", lambda: "ok") == "ok"
    call, outer = sent
    assert call["parent_id"] == outer["id"] != outer["parent_id"] == "53995c3f42cd8ad8"
    assert call["aws"] == {"operation": "UpdateItem"} and call["name"] == "dynamodb"
    assert outer["annotations"] == {"decision": "allowed"}
    assert outer["start_time"] < call["start_time"] < call["end_time"] < outer["end_time"]


def test_a_4xx_is_an_error_anything_else_a_fault_and_the_exception_still_raises():
    tracer, sent = _tracer()
    refused = ClientError({"Error": {"Code": "ConditionalCheckFailedException"},
                           "ResponseMetadata": {"HTTPStatusCode": 400}}, "UpdateItem")  # fmt: skip

    def raise_(exc: Exception) -> Any:
        raise exc

    with pytest.raises(RuntimeError), tracer.in_subsegment("CostGate"):
        with pytest.raises(ClientError):
            tracer.aws_call("dynamodb", "TransactWriteItems", lambda: raise_(refused))
        with pytest.raises(TimeoutError):
            tracer.aws_call("ssm", "GetParameter", lambda: raise_(TimeoutError()))
        raise RuntimeError("the step fails")
    client_error, timeout, step = sent
    assert client_error.get("error") is True and "fault" not in client_error
    assert timeout.get("fault") is True and step.get("fault") is True


def test_nothing_is_sent_outside_a_sampled_trace_or_outside_a_step():
    for header in (None, "Root=1-a-b;Parent=c;Sampled=0"):
        tracer, sent = _tracer(header)
        with tracer.in_subsegment("Quota") as step:
            assert step is None
            assert tracer.aws_call("dynamodb", "UpdateItem", lambda: 1) == 1
        assert sent == []
    tracer, sent = _tracer()
    assert tracer.aws_call("dynamodb", "UpdateItem", lambda: 2) == 2 and sent == []


def test_the_daemon_gets_one_datagram_with_the_documented_header():
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.settimeout(5)
    try:
        Daemon(f"127.0.0.1:{sink.getsockname()[1]}").send({"name": "Quota", "id": "1"})
        raw = sink.recv(65536)
    finally:
        sink.close()
    assert raw.startswith(HEADER)
    assert json.loads(raw[len(HEADER) :]) == {"name": "Quota", "id": "1"}
