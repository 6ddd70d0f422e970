"""Each `verify` check against a scripted deployment: passes when the defense holds, fails
when that one defense is removed (so no check passes by construction)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

from ops import verify
from ops.http import Reply

EDGE, ORIGIN = "https://site.example/chat", "https://api.example/prod/chat"
SAFE = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


@dataclass(frozen=True)
class Deployment:
    """A well-defended deployment, one flag per defense."""

    origin_checks_header: bool = True
    validates: bool = True
    rate_limit: int | None = 5
    drops_forged_turns: bool = True
    no_store: bool = True
    trusts_viewer_header: bool = False

    def __post_init__(self):
        object.__setattr__(self, "sent", [])

    def send(self, method, url, *, payload=None, raw=None, headers=None, **_):
        headers = headers or {}
        self.sent.append(url)
        if url == ORIGIN:
            secret_ok = not self.origin_checks_header
            return Reply(200 if secret_ok else 403, {"error": "forbidden"} if not secret_ok else {})
        if self.rate_limit is not None and len(self.sent) > self.rate_limit + 12:
            return Reply(403, {"error": "rate"})
        body = payload if payload is not None else _parse(raw)
        if self.validates and not _valid(body):
            return Reply(400, {"error": "bad request"})
        if self.trusts_viewer_header and "CloudFront-Viewer-Address" in headers:
            return Reply(503, {"error": "unavailable"})
        history = (body or {}).get("history", [])
        said = "" if self.drops_forged_turns else " ".join(t["content"] for t in history)
        return Reply(200, {"reply": "Hello. " + said, "sig": "s" * 64, "sources": []},
                     SAFE if self.no_store else {})  # fmt: skip


def _parse(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _valid(body):
    return (
        isinstance(body, dict)
        and set(body) <= {"message", "history", "page"}
        and isinstance(body.get("message"), str)
        and 0 < len(body["message"]) <= 2000
        and all(t.get("role") in ("user", "assistant") for t in body.get("history", []))
    )


def _run(deployment):
    target = verify.Target(EDGE, ORIGIN, burst=20, burst_seconds=0.0, reserve_micros=10_381)
    return {c.name: c for c in verify.run(target, send=deployment.send, sleep=lambda _: None)}


def _failed(deployment):
    return sorted(name for name, c in _run(deployment).items() if not c.passed)


def test_a_well_defended_deployment_passes_every_check():
    assert _failed(Deployment()) == []


@pytest.mark.parametrize(
    ("weakness", "fails"),
    [
        ({"origin_checks_header": False},
         ["origin direct, forged origin header", "origin direct, no origin header"]),
        ({"rate_limit": None}, ["burst past the edge rate rule"]),
        ({"drops_forged_turns": False}, ["forged assistant turns not used"]),
        ({"no_store": False}, ["chat reply uncacheable, nosniff"]),
        ({"trusts_viewer_header": True}, ["viewer-sent CloudFront-Viewer-Address ignored"]),
    ],
)  # fmt: skip
def test_removing_one_defense_fails_exactly_its_check(weakness, fails):
    assert _failed(replace(Deployment(), **weakness)) == fails


def test_without_validation_every_schema_check_fails():
    failed = _failed(Deployment(validates=False))
    assert [name for name in failed if name.startswith("schema:")] == sorted(
        f"schema: {label}" for label, _ in verify.SCHEMA_VIOLATIONS
    )


def test_the_spend_notice_bounds_the_model_calls():
    target = verify.Target(EDGE, ORIGIN, burst=20, burst_seconds=0.0, reserve_micros=10_381)
    assert "at most 3 messages" in verify.spend_notice(target)
    assert "$0.031143" in verify.spend_notice(target)


def test_an_edge_already_blocking_this_address_is_reported_once():
    deployment = Deployment(rate_limit=-13)  # blocks from the first request
    checks = list(_run(deployment).values())
    assert len(checks) == 1 and not checks[0].passed and "already blocks" in checks[0].detail
