"""The custom resource that generates the SSM SecureString secrets at deploy time."""

from __future__ import annotations

import json
import logging

import boto3
import pytest
from moto import mock_aws

from infra.secret_generator import index

NAME = "/chatguard/origin-secret"


def _event(kind: str, *, name: str = NAME, physical: str | None = None, expose: bool = False):
    event = {
        "RequestType": kind,
        "ResponseURL": "https://example.com/response",
        "StackId": "stack",
        "RequestId": "req",
        "LogicalResourceId": "Secret",
        "ResourceProperties": {"ParameterName": name, **({"Expose": "current"} if expose else {})},
    }
    if physical is not None:
        event["PhysicalResourceId"] = physical
    return event


@pytest.fixture
def ssm():
    with mock_aws():
        yield boto3.client("ssm", region_name="eu-west-1")


def _run(event, ssm):
    replies = []
    index.respond(event, ssm=ssm, sender=lambda url, reply: replies.append(reply))
    (reply,) = replies
    return reply


def _stored(ssm, name=NAME):
    parameter = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    return parameter["Type"], json.loads(parameter["Value"])


def test_create_writes_a_securestring_in_the_documented_format(ssm):
    reply = _run(_event("Create"), ssm)
    assert reply["Status"] == "SUCCESS" and reply["PhysicalResourceId"] == NAME
    kind, value = _stored(ssm)
    assert kind == "SecureString"
    assert set(value) == {"current", "previous", "rotated_at"}
    assert len(value["current"]) >= 43 and value["previous"] is None
    assert "Data" not in reply  # not exposed: nothing leaves the parameter


def test_two_creates_never_share_a_value(ssm):
    _run(_event("Create"), ssm)
    _run(_event("Create", name="/chatguard/other"), ssm)
    assert _stored(ssm)[1]["current"] != _stored(ssm, "/chatguard/other")[1]["current"]


def test_an_existing_parameter_is_kept_not_overwritten(ssm):
    _run(_event("Create"), ssm)
    before = _stored(ssm)[1]
    assert _run(_event("Create"), ssm)["Status"] == "SUCCESS"
    assert _run(_event("Update", physical=NAME), ssm)["Status"] == "SUCCESS"
    assert _stored(ssm)[1] == before


def test_the_exposed_secret_returns_the_current_value_with_noecho(ssm):
    _run(_event("Create"), ssm)
    reply = _run(_event("Update", physical=NAME, expose=True), ssm)
    assert reply["Data"] == {"Value": _stored(ssm)[1]["current"]}
    assert reply["NoEcho"] is True


def test_a_rotated_value_is_what_the_next_deploy_reads(ssm):
    _run(_event("Create"), ssm)
    rotated = {"current": "rotated-value", "previous": "old", "rotated_at": 1}
    ssm.put_parameter(Name=NAME, Value=json.dumps(rotated), Type="SecureString", Overwrite=True)
    reply = _run(_event("Update", physical=NAME, expose=True), ssm)
    assert reply["Data"] == {"Value": "rotated-value"}


def test_renaming_creates_the_new_parameter_and_delete_removes_it(ssm):
    _run(_event("Create"), ssm)
    reply = _run(_event("Update", name="/chatguard/renamed", physical=NAME), ssm)
    assert reply["PhysicalResourceId"] == "/chatguard/renamed"
    assert _stored(ssm, "/chatguard/renamed")[0] == "SecureString"
    assert _run(_event("Delete", physical=NAME), ssm)["Status"] == "SUCCESS"
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=NAME)
    assert _run(_event("Delete", physical=NAME), ssm)["Status"] == "SUCCESS"  # idempotent


def test_a_failure_is_reported_to_cloudformation_not_left_hanging(ssm):
    reply = _run(_event("Create", name="relative-name"), ssm)
    assert reply["Status"] == "FAILED"
    assert "absolute" in reply["Reason"]
    assert _run(_event("Delete", physical=reply["PhysicalResourceId"]), ssm)["Status"] == "SUCCESS"


def test_no_value_is_ever_logged(ssm, caplog):
    caplog.set_level(logging.INFO)  # the level the function sets for itself on Lambda
    _run(_event("Create"), ssm)
    _run(_event("Update", physical=NAME, expose=True), ssm)
    value = _stored(ssm)[1]["current"]
    assert value not in caplog.text
