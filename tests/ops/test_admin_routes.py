"""local/server/admin.py: the routes `--local` calls, their errors, and nothing written on bad
input."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from local.engine.tracing import AwsCall, StepRecord, Trace
from local.server import admin
from steps.lib.money import ledger


@pytest.fixture
def runtime(dynamodb, ssm, settings):
    # What admin.handle reads from a LocalRuntime: settings, the moto clients, the edge's secret.
    return SimpleNamespace(
        settings=settings, dynamodb=dynamodb, ssm=ssm,
        _secrets={settings.origin_secret_param: "a" * 43},
    )  # fmt: skip


def test_unknown_routes_and_methods_are_refused(runtime):
    assert admin.handle("GET", "/_admin/nope", None, runtime)[0] == 404
    status, body = admin.handle("GET", "/_admin/rotate", None, runtime)
    assert status == 405 and "POST" in body["error"]


def test_mode_round_trip_and_a_bad_mode_writes_nothing(runtime):
    assert admin.handle("GET", "/_admin/mode", None, runtime) == (200, {"mode": "normal"})
    status, body = admin.handle("POST", "/_admin/mode", {"mode": "sleep"}, runtime)
    assert status == 400 and "normal, degraded, off" in body["error"]
    assert "Item" not in runtime.dynamodb.get_item(TableName="chatguard", Key=ledger.MODE_KEY)
    status, body = admin.handle("POST", "/_admin/mode", {"mode": "off"}, runtime)
    assert status == 200 and body == {"mode": "off", "previous": "normal", "changed": True}


def test_spend_refuses_a_malformed_day(runtime):
    assert admin.handle("POST", "/_admin/spend", {"day": 20270115}, runtime)[0] == 400
    status, body = admin.handle("POST", "/_admin/spend", {"day": "2027-01-15"}, runtime)
    assert status == 200 and body["day"] == "2027-01-15" and body["day_micros"] == 0


def test_rotating_the_origin_secret_moves_the_local_edge_too(runtime, settings):
    status, body = admin.handle("POST", "/_admin/rotate", {"secret": "origin-secret"}, runtime)
    assert status == 200 and body["applied"] and body["edge_updated"] == ["local edge"]
    assert runtime._secrets[settings.origin_secret_param] != "a" * 43
    status, body = admin.handle("POST", "/_admin/rotate", {"secret": "origin-secret"}, runtime)
    assert status == 409 and "still accepted" in body["error"]
    assert admin.handle("POST", "/_admin/rotate", {"secret": "password"}, runtime)[0] == 400


def test_trace_spans_put_each_call_inside_its_step_in_time_order():
    t0 = 1000.0
    trace = Trace("req-1", 200, 40.0, (
        StepRecord("Quota", "allowed", 10.0, (AwsCall("dynamodb", "UpdateItem", 4.0, t0 + 0.003),),
                   t0, (("visitor", "ab12"),)),
        StepRecord("CostGate", "reserved", 20.0, (), t0 + 0.015),
        StepRecord("Answer", "200", 0.0),  # a terminal state: no start time of its own
    ))  # fmt: skip
    spans = admin.trace_spans(trace)
    assert [(s["depth"], s["name"], s["start_ms"]) for s in spans] == [
        (0, "Quota", 0.0),
        (1, "dynamodb UpdateItem", 3.0),
        (0, "CostGate", 15.0),
        (0, "Answer", 35.0),
    ]
    assert spans[0]["note"] == "allowed (visitor=ab12)" and spans[0]["fields"] == {
        "visitor": "ab12"
    }
