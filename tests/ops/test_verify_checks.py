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
    answers: str = "answered"  # or limited (this address's quota used), degraded, off
    signs: bool = True

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
        safe = SAFE if self.no_store else {}
        if self.answers == "limited":
            return Reply(200, {"reply": "Come back tomorrow.", "limited": True}, safe)
        if self.answers in ("degraded", "off"):
            flags = {"degraded": True, **({"off": True} if self.answers == "off" else {})}
            return Reply(200, {"reply": "From the site.", "sources": [], **flags}, safe)
        sig = {"sig": "s" * 64} if self.signs else {}
        return Reply(200, {"reply": "Hello. " + said, "sources": [], **sig}, safe)


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


TARGET = verify.Target(EDGE, ORIGIN, burst=20, burst_seconds=0.0, reserve_micros=10_381)


def _checks(deployment, target=TARGET):
    return verify.run(target, send=deployment.send, sleep=lambda _: None)


def _run(deployment):
    return {c.name: c for c in _checks(deployment)}


def _failed(deployment):
    return sorted(name for name, c in _run(deployment).items() if c.passed is False)


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


def test_an_edge_already_blocking_this_address_keeps_every_row_untested():
    deployment = Deployment(rate_limit=-13)  # blocks from the first request
    checks = _checks(deployment)
    assert [c.name for c in checks] == verify.check_names(TARGET)
    assert all(c.passed is None and "already blocks" in c.detail for c in checks)
    assert "wait out" in checks[0].detail and verify.exit_code(checks) == verify.EXIT_INCOMPLETE


def test_an_edge_that_does_not_answer_is_untested_not_failed():
    def unreachable(*_args, **_kwargs):
        raise OSError("connection refused")

    checks = verify.run(TARGET, send=unreachable, sleep=lambda _: None)
    assert [c.name for c in checks] == verify.check_names(TARGET)
    assert all(c.passed is None and "no answer from" in c.detail for c in checks)


FORGED_ROWS = [verify.BASELINE, verify.FORGED]


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        ("limited", "used its messages for today"),
        ("degraded", "`chatguard mode normal`"),
        ("off", "switched off"),
    ],
)
def test_no_signed_answer_means_cannot_test_never_fail(answers, says):
    """After the operator's own 20 chats, or in degraded/off mode: nothing failed."""
    checks = _checks(Deployment(answers=answers))
    by_name = {c.name: c for c in checks}
    assert [c.name for c in checks] == verify.check_names(TARGET)  # no row disappears
    assert [c for c in checks if c.passed is False] == []
    for name in FORGED_ROWS:
        assert by_name[name].passed is None and says in by_name[name].detail
        assert by_name[name].detail.startswith("cannot test: ")
    assert by_name[verify.HEADERS].passed is True  # still measurable on any 200
    assert verify.exit_code(checks) == verify.EXIT_INCOMPLETE
    rendered = verify.render(checks)
    assert "CANNOT TEST" in rendered and "FAILED" not in rendered


def test_an_unsigned_answer_fails_the_baseline_and_still_sends_the_forged_turns():
    checks = _run(Deployment(signs=False))
    assert checks[verify.BASELINE].passed is False
    assert checks[verify.FORGED].passed is True


def test_a_local_run_keeps_the_server_trace_row_when_it_cannot_test():
    target = verify.Target(EDGE, ORIGIN, burst=20, burst_seconds=0.0, reserve_micros=1,
                           admin_url="https://site.example/_admin")  # fmt: skip
    checks = _checks(Deployment(answers="limited"), target)
    assert [c.name for c in checks] == verify.check_names(target)
    dropped = next(c for c in checks if c.name == verify.DROPPED)
    assert dropped.passed is None and "restart `chatguard serve`" in dropped.detail
