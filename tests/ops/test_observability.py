"""Every step logs one line in and one out, emits one metric per decision, and is traced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from steps.lib.runtime import observability

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_backend(monkeypatch):
    for name in ("AWS_LAMBDA_FUNCTION_NAME", "POWERTOOLS_LOG_LEVEL", "CHATGUARD_XRAY"):
        monkeypatch.delenv(name, raising=False)
    observability.reset()
    yield
    observability.reset()


def _step(step, name, **fields):
    @observability.instrumented(step)
    def handler(event, context=None):
        observability.decision(name, **fields)
        return {"decision": name}

    return handler


def _lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_offline_nothing_reaches_stdout_and_metrics_stay_in_memory(capsys):
    assert _step("Quota", "limited", visitor="ab12")({"requestId": "r1"}) == {"decision": "limited"}
    captured = capsys.readouterr()
    assert captured.out == ""  # no EMF blob on stdout offline
    assert [line["message"] for line in _lines(captured.err)] == ["in", "out"]
    assert observability.local_metrics() == [{"QuotaLimited": 1}]


def test_a_quiet_level_silences_the_step_lines(capsys, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    observability.reset()
    _step("Quota", "allowed", visitor="ab12")({"requestId": "r1"})
    assert capsys.readouterr() == ("", "")


def test_one_json_line_in_and_one_out_with_the_safe_fields(capsys, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")
    observability.reset()
    _step("CostGate", "reserved", visitor="ab12", reserved_micros=4_000)({"requestId": "r2"})
    first, last = _lines(capsys.readouterr().err)
    assert first["message"] == "in" and first["step"] == "CostGate" and first["request_id"] == "r2"
    assert last["message"] == "out" and last["decision"] == "reserved"
    assert (last["visitor"], last["reserved_micros"], last["service"]) == (
        "ab12",
        4_000,
        "chatguard",
    )
    assert isinstance(last["ms"], float)


def test_ips_secrets_and_client_text_never_reach_a_log_line(capsys, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")
    observability.reset()
    handler = _step(
        "Quota",
        "allowed",
        visitor="ab12",
        ip="203.0.113.7",
        viewer_address="[2001:db8::1]:443",
        note="198.51.100.23:51234",
        origin_secret="s3cr3t-value",
        message="hello there",
        body={"message": "x"},
        salt="pepper",
        forged_sig=True,
    )
    handler({"requestId": "r3", "viewerAddress": "203.0.113.7:443", "body": {"message": "hi"}})
    text = capsys.readouterr().err
    for leaked in ("203.0.113.7", "2001:db8", "198.51.100.23", "s3cr3t", "hello there", "pepper"):
        assert leaked not in text
    out = _lines(text)[-1]
    assert out["note"] == "[redacted-ip]" and out["forged_sig"] is True and out["visitor"] == "ab12"


def test_the_naive_logger_would_have_leaked_the_address():
    # The same fields through a plain json.dumps: what the sanitiser exists to prevent.
    fields = {"visitor": "ab12", "note": "198.51.100.23:51234"}
    assert "198.51.100.23" in json.dumps(fields)
    assert "198.51.100.23" not in json.dumps(observability.safe_fields(fields))


@pytest.mark.parametrize(
    ("step", "decision", "fields", "expected"),
    [
        ("OriginVerify", "forbidden", {}, {"OriginRejected": 1}),
        ("OriginVerify", "allowed", {}, {}),
        ("Quota", "limited", {}, {"QuotaLimited": 1}),
        ("CostGate", "off", {}, {"Degraded": 1}),
        ("CostGate", "degraded", {}, {}),  # counted once, where S7 serves it
        ("Degraded", "degraded", {}, {"Degraded": 1}),
        ("Invoke", "answered", {"inputTokens": 10}, {"ModelCalls": 1}),
        ("Reconcile", "settled", {"cost_micros": 1234}, {"CostMicros": 1234}),
        ("Reconcile", "already_settled", {"cost_micros": 1234}, {}),
    ],
)
def test_one_metric_per_decision(step, decision, fields, expected):
    assert observability.metrics_for(step, decision, fields, None) == expected


@pytest.mark.parametrize(
    ("step", "metric"),
    [
        ("Quota", "FailClosed"),
        ("Retrieve", "FailClosed"),
        ("Invoke", "ReservationOpen"),
        ("Reconcile", "ReservationOpen"),
    ],
)
def test_an_exception_is_logged_counted_and_still_raised(capsys, step, metric):
    @observability.instrumented(step)
    def handler(event, context=None):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        handler({"requestId": "r4"})
    out = _lines(capsys.readouterr().err)[-1]
    assert (out["level"], out["error"], out["step"]) == ("ERROR", "RuntimeError", step)
    assert observability.local_metrics() == [{metric: 1}]


def test_on_lambda_each_decision_is_an_emf_line_in_the_chatguard_namespace(capsys, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "chatguard-Reconcile")
    monkeypatch.setenv("CHATGUARD_XRAY", "off")  # X-Ray is covered in a subprocess below
    observability.reset()
    _step("Reconcile", "settled", visitor="ab12", cost_micros=2_500)({"requestId": "r5"})
    lines = _lines(capsys.readouterr().out)
    emf = [line for line in lines if "_aws" in line]
    assert len(emf) == 1
    directive = emf[0]["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "Chatguard"
    assert [m["Name"] for m in directive["Metrics"]] == ["CostMicros"]
    assert emf[0]["CostMicros"] in (2500, 2500.0, [2500.0])
    assert [line["message"] for line in lines if "message" in line] == ["in", "out"]


def test_listeners_see_every_step_and_cannot_break_it():
    seen = []

    class Recorder:
        def step_started(self, step, request_id):
            seen.append(("start", step, request_id))

        def step_finished(self, invocation):
            seen.append(("end", invocation.step, invocation.decision, dict(invocation.fields)))
            raise RuntimeError("a buggy recorder")

    recorder = Recorder()
    observability.add_listener(recorder)
    try:
        assert _step("Quota", "allowed", visitor="ab12")({"requestId": "r6"}) == {
            "decision": "allowed"
        }
    finally:
        observability.remove_listener(recorder)
    assert seen == [("start", "Quota", "r6"), ("end", "Quota", "allowed", {"visitor": "ab12"})]


_XRAY_SCRIPT = r"""
import json, os, socket, sys, boto3
from moto import mock_aws
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(("127.0.0.1", 0))
sink.settimeout(5)
os.environ.update(AWS_LAMBDA_FUNCTION_NAME="chatguard-CostGate", AWS_ACCESS_KEY_ID="x",
                  AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1",
                  AWS_XRAY_DAEMON_ADDRESS="127.0.0.1:%d" % sink.getsockname()[1],
                  _X_AMZN_TRACE_ID="Root=1-5759e988-bd862e3fe1be46a994272793;"
                                   "Parent=53995c3f42cd8ad8;Sampled=" + sys.argv[1])
from steps.lib.runtime import observability

@observability.instrumented("CostGate")
def handler(event, context=None):
    boto3.client("dynamodb").list_tables()
    observability.decision("reserved", visitor="ab12", reserved_micros=4000)
    return {}

with mock_aws():
    handler({"requestId": "r7"})
docs = []
try:
    while True:
        header, _, body = sink.recv(65536).partition(b"\n")
        assert json.loads(header) == {"format": "json", "version": 1}
        docs.append(json.loads(body))
except socket.timeout:
    pass
print(json.dumps(docs))
"""


def _xray_documents(sampled: str) -> list[dict]:
    # A subprocess: the botocore patch for X-Ray is process-wide.
    done = subprocess.run(
        [sys.executable, "-c", _XRAY_SCRIPT, sampled],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    docs: list[dict] = json.loads(done.stdout.strip().splitlines()[-1])
    return docs


def test_on_lambda_each_step_is_an_annotated_xray_subsegment_with_its_aws_calls():
    call, step = _xray_documents("1")  # the AWS call ends (and is sent) first
    assert step["name"] == "CostGate" and step["type"] == "subsegment"
    assert step["trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert step["parent_id"] == "53995c3f42cd8ad8"  # Lambda's function segment
    assert step["annotations"] == {"step": "CostGate", "decision": "reserved"}
    assert step["metadata"] == {"chatguard": {"cost": {"reserved_micros": 4000}}}
    assert step["start_time"] <= call["start_time"] <= call["end_time"] <= step["end_time"]
    assert (call["name"], call["aws"], call["namespace"]) == (
        "dynamodb", {"operation": "ListTables"}, "aws",
    )  # fmt: skip
    assert call["parent_id"] == step["id"] and call["trace_id"] == step["trace_id"]
    assert "fault" not in call and "error" not in call


def test_an_unsampled_trace_sends_nothing():
    assert _xray_documents("0") == []


def test_gate_steps_import_without_powertools_xray_or_numpy():
    script = (
        "import sys, steps.quota, steps.cost_gate, steps.origin_verify\n"
        "import steps.invoke, steps.reconcile\n"
        "heavy = ('aws_lambda_powertools', 'aws_xray_sdk', 'numpy')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(heavy)}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_invalid_settings_fail_the_step_with_one_line_naming_the_setting(monkeypatch, capsys):
    from steps import quota
    from steps.lib.runtime import caches
    from steps.lib.runtime.errors import SettingsError

    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "plenty")
    caches.reset_all()
    try:
        with pytest.raises(SettingsError):
            quota.handler({"requestId": "r-1", "viewerAddress": "192.0.2.1:443"}, None)
    finally:
        monkeypatch.delenv("CHATGUARD_VISITOR_MESSAGE_LIMIT")
        caches.reset_all()
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    out = [x for x in lines if x.get("message") == "out"]
    assert len(out) == 1 and out[0]["error"] == "SettingsError"
    assert "visitor_message_limit" in out[0]["problem"] and "plenty" in out[0]["problem"]
    assert "192.0.2.1" not in json.dumps(lines)
