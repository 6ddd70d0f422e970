"""The log line and EMF formats the steps write without Powertools."""

from __future__ import annotations

import io
import json

from steps.lib.runtime.json_lines import EmfMetrics, JsonLogger

NOON = 1_795_953_600.25  # 2026-11-29 12:00:00.250 UTC


def test_one_json_object_per_line_at_or_above_the_level():
    out = io.StringIO()
    logger = JsonLogger(service="chatguard", level="info", stream=out, clock=lambda: NOON)
    logger.info("in", extra={"step": "Quota", "request_id": "r1"})
    logger.error("out", extra={"step": "Quota", "error": "RuntimeError"})
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {"level": "INFO", "message": "in", "service": "chatguard",
                     "timestamp": "2026-11-29T12:00:00.250+00:00", "step": "Quota",
                     "request_id": "r1"}  # fmt: skip
    assert (second["level"], second["error"]) == ("ERROR", "RuntimeError")
    quiet = io.StringIO()
    JsonLogger(service="chatguard", level="CRITICAL", stream=quiet).error("out", extra={})
    assert quiet.getvalue() == ""


def test_an_invocations_metrics_are_one_emf_line_and_then_forgotten():
    out = io.StringIO()
    metrics = EmfMetrics(namespace="Chatguard", service="chatguard", stream=out,
                         clock=lambda: NOON)  # fmt: skip
    metrics.flush_metrics()
    assert out.getvalue() == ""  # nothing gathered: no line
    metrics.add_metric(name="ModelCalls", unit="Count", value=1)
    metrics.add_metric(name="CostMicros", unit="None", value=2500)
    metrics.flush_metrics()
    metrics.flush_metrics()
    (line,) = (json.loads(x) for x in out.getvalue().splitlines())
    assert line["_aws"] == {
        "Timestamp": 1_795_953_600_250,  # epoch milliseconds, as the EMF specification asks
        "CloudWatchMetrics": [{
            "Namespace": "Chatguard", "Dimensions": [["service"]],
            "Metrics": [{"Name": "ModelCalls", "Unit": "Count"},
                        {"Name": "CostMicros", "Unit": "None"}],
        }],
    }  # fmt: skip
    assert (line["service"], line["ModelCalls"], line["CostMicros"]) == ("chatguard", 1, 2500)


def test_a_level_function_is_asked_at_every_line() -> None:
    """The offline runtime's loggers outlive a terminal command that quiets them for its own
    duration: the level is read per line, so quieting after the logger was built works."""
    out = io.StringIO()
    level = ["INFO"]
    logger = JsonLogger(service="chatguard", level=lambda: level[0], stream=out)
    logger.info("shown", extra={})
    level[0] = "CRITICAL"
    logger.info("hidden", extra={})
    logger.error("hidden too", extra={})
    assert [json.loads(line)["message"] for line in out.getvalue().splitlines()] == ["shown"]
