"""`traces`: X-Ray summaries filtered on our annotations, and a per-step waterfall."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from ops import traces, waterfall

TRACE = "1-67890abc-0123456789abcdef01234567"


def _segment(seg_id, name, start, end, **extra):
    return {
        "trace_id": TRACE,
        "id": seg_id,
        "name": name,
        "start_time": start,
        "end_time": end,
        **extra,
    }


def _put_trace(xray, t0):
    quota = _segment(
        "a" * 16,
        "chatguard-Quota",
        t0,
        t0 + 0.030,
        subsegments=[
            {
                "id": "b" * 16,
                "name": "Quota",
                "start_time": t0 + 0.002,
                "end_time": t0 + 0.028,
                "annotations": {"step": "Quota", "decision": "allowed"},
                "subsegments": [
                    {
                        "id": "c" * 16,
                        "name": "DynamoDB",
                        "namespace": "aws",
                        "start_time": t0 + 0.004,
                        "end_time": t0 + 0.020,
                        "aws": {"operation": "UpdateItem"},
                    }
                ],
            }
        ],
    )
    gate = _segment(
        "d" * 16,
        "chatguard-CostGate",
        t0 + 0.040,
        t0 + 0.070,
        subsegments=[
            {
                "id": "e" * 16,
                "name": "CostGate",
                "start_time": t0 + 0.041,
                "end_time": t0 + 0.069,
                "annotations": {"step": "CostGate", "decision": "degraded"},
            }
        ],
    )
    docs = [json.dumps(gate), json.dumps(quota)]
    assert xray.put_trace_segments(TraceSegmentDocuments=docs)["UnprocessedTraceSegments"] == []


def test_summaries_and_the_waterfall_of_one_trace(aws_env):
    xray = aws_env.client("xray")
    t0 = time.time() - 60
    _put_trace(xray, t0)
    found = traces.summaries(xray, since=timedelta(hours=1), expression=None)
    assert [s["Id"] for s in found] == [TRACE]
    spans = traces.trace_spans(xray, TRACE)
    assert [(s.depth, s.name, s.note) for s in spans] == [
        (0, "chatguard-Quota", ""),
        (1, "Quota", "allowed"),
        (2, "DynamoDB UpdateItem", ""),
        (0, "chatguard-CostGate", ""),
        (1, "CostGate", "degraded"),
    ]
    assert spans[2].start_ms == pytest.approx(4, abs=0.5) and spans[2].ms == pytest.approx(
        16, abs=0.5
    )
    assert spans[3].start_ms == pytest.approx(40, abs=0.5)
    picture = waterfall.render(spans, title=TRACE)
    assert "DynamoDB UpdateItem" in picture and "degraded" in picture


def test_an_unknown_trace_is_a_clear_error(aws_env):
    with pytest.raises(LookupError, match="not found"):
        traces.trace_spans(aws_env.client("xray"), TRACE)


def test_the_decision_filter_is_sent_to_xray_and_all_pages_are_read():
    # moto answers any FilterExpression with "not implemented": check the request instead.
    xray = boto3.client(
        "xray", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    now = datetime(2027, 1, 15, 8, tzinfo=UTC)
    expression = traces.filter_expression(decision="degraded", step="CostGate")
    assert expression == 'annotation.step = "CostGate" AND annotation.decision = "degraded"'
    expected = {
        "StartTime": now - timedelta(hours=1),
        "EndTime": now,
        "Sampling": False,
        "FilterExpression": expression,
    }
    summary = {
        "Id": TRACE,
        "Duration": 0.07,
        "Annotations": {"decision": [{"AnnotationValue": {"StringValue": "degraded"}}]},
    }
    with Stubber(xray) as stub:
        stub.add_response(
            "get_trace_summaries", {"TraceSummaries": [summary], "NextToken": "n"}, expected
        )
        stub.add_response(
            "get_trace_summaries", {"TraceSummaries": [summary]}, expected | {"NextToken": "n"}
        )
        found = traces.summaries(xray, since=timedelta(hours=1), expression=expression, now=now)
    assert len(found) == 2
    assert "decision=degraded" in traces.render_summaries(found)


@pytest.mark.parametrize("bad", ['degraded" OR annotation.step = "x', "a b", ""])
def test_filter_values_cannot_inject_into_the_expression(bad):
    with pytest.raises(ValueError):
        traces.filter_expression(decision=bad)


@pytest.mark.parametrize(
    ("text", "delta"),
    [("30m", timedelta(minutes=30)), ("1h", timedelta(hours=1)), ("24h", timedelta(hours=24))],
)
def test_since_durations(text, delta):
    assert traces.parse_since(text) == delta


@pytest.mark.parametrize("text", ["0h", "2d", "soon", "-1h"])
def test_bad_since_durations_are_refused(text):
    with pytest.raises(ValueError):
        traces.parse_since(text)
