"""S1, origin_verify: the origin secret (and its rotation) and the request's shape,
with the wire shapes of docs/internals.md."""

from __future__ import annotations

import pytest

from steps import origin_verify
from steps.lib.runtime import observability
from steps.lib.runtime.settings import Settings

from .conftest import load_event


def test_origin_verify_allows_the_current_secret_and_returns_the_normalised_request(aws):
    out = origin_verify.handler(load_event("origin_verify"), None)
    assert out == {
        "decision": "allowed",
        "request": {
            "message": "How does the WAF rate rule count requests?",
            "history": [],
            "page": "/posts/waf",
        },
    } | ({"quiet": True} if "quiet" in out else {})  # set when quiet: tests/steps/test_wake.py


@pytest.mark.parametrize("header", ["", None, "origin-secret-for-tests-012345678", "x" * 40, 7])
def test_origin_verify_forbids_a_missing_or_wrong_header(aws, header):
    event = load_event("origin_verify") | {"originVerify": header}
    out = origin_verify.handler(event, None)
    assert out["decision"] == "forbidden"
    assert out["response"]["statusCode"] == 403
    assert "error" in out["response"]["body"]


def test_origin_verify_checks_the_origin_before_the_body(aws):
    event = load_event("origin_verify") | {"originVerify": "wrong", "body": {"nope": 1}}
    assert origin_verify.handler(event, None)["decision"] == "forbidden"


def test_origin_verify_answers_400_with_a_clear_message_for_a_bad_body(aws):
    event = load_event("origin_verify")
    event["body"] = {"message": "hi", "history": [{"role": "system", "content": "x"}]}
    out = origin_verify.handler(event, None)
    assert out["decision"] == "bad_request"
    assert out["response"] == {
        "statusCode": 400,
        "body": {"error": "history[0].role must be 'user' or 'assistant'"},
    }
    assert aws.count_items() == 0


def test_origin_verify_never_logs_client_chosen_field_names(aws):
    seen = []

    class Recorder:
        def step_started(self, step, request_id):
            pass

        def step_finished(self, invocation):
            seen.append(dict(invocation.fields))

    event = load_event("origin_verify")
    event["body"] = {"message": "hi", "198.51.100.9": 1, "my secret note": 2}
    recorder = Recorder()
    observability.add_listener(recorder)
    try:
        out = origin_verify.handler(event, None)
    finally:
        observability.remove_listener(recorder)
    assert "198.51.100.9" in out["response"]["body"]["error"]  # the client is still told
    assert seen == [{"reason": "request body has unknown field(s)"}]


def test_origin_verify_accepts_the_previous_secret_only_during_the_grace_period(aws):
    import time

    from steps.lib.runtime import caches
    from steps.lib.runtime.secrets import SecretValue

    s = Settings()
    new = "new-origin-secret-0123456789"
    aws.put_secret(
        s.origin_secret_param,
        SecretValue(new, "old-origin-secret-0123456789", int(time.time()) - 60),
    )
    caches.reset_all()
    for header, expected in ((new, "allowed"), ("old-origin-secret-0123456789", "allowed")):
        event = load_event("origin_verify") | {"originVerify": header}
        assert origin_verify.handler(event, None)["decision"] == expected
    expired = int(time.time()) - s.secret_grace_seconds - 1
    aws.put_secret(s.origin_secret_param, SecretValue(new, "old-origin-secret-0123456789", expired))
    caches.reset_all()
    event = load_event("origin_verify") | {"originVerify": "old-origin-secret-0123456789"}
    assert origin_verify.handler(event, None)["decision"] == "forbidden"
