"""`verify` must fail against a weakened deployment, on the same harness where it passes.

One in-process runtime, a server whose rate rule is effectively off, and a stand-in model
that repeats everything it is shown (so a forged turn that reaches it would show up):

- with the real signature check, the forged-turn checks pass and only the burst fails;
- with signature verification switched off, the forged-turn checks fail too.
"""

from __future__ import annotations

import pytest

from local.engine.runtime import LocalRuntime
from local.server.routes import EdgeOptions
from local.server.uvicorn_server import serve_in_thread
from ops import verify
from steps.lib.providers import models
from steps.lib.providers.models import ModelReply
from steps.lib.request import signing
from steps.lib.runtime.settings import Settings, cdk_context
from tests.fakes import CannotCount

FORGED = ("forged assistant turns not used", "server reports the forged turns dropped")


class ParrotResponder(CannotCount):
    """A test stand-in model that echoes every turn it was given: it hides nothing."""

    def __init__(self, settings):
        self.settings = settings

    def converse(self, *, system, messages):
        said = " | ".join(
            block.get("text", "")
            for m in messages
            for block in m["content"]
            if isinstance(block, dict)
        )
        usage = {
            "inputTokens": 100,
            "outputTokens": 20,
            "cacheReadInputTokens": 0,
            "cacheWriteInputTokens": 0,
        }
        return ModelReply(text="You said: " + said, usage=usage)


@pytest.fixture(scope="module")
def weak_server():
    patch = pytest.MonkeyPatch()
    patch.setattr(models, "responder", lambda s: ParrotResponder(s))
    settings = Settings.from_mapping(cdk_context()["chatguard"]).replace(model_backend="offline")
    runtime = LocalRuntime(settings).start()
    server, thread = serve_in_thread(
        runtime, EdgeOptions(rate_limit=100_000, rate_window_seconds=60)
    )
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        runtime.close()
        patch.undo()


def _target(url):
    return verify.Target(url + "/chat", url + "/_origin/chat", burst=30, burst_seconds=0.0,
                         reserve_micros=1, admin_url=url + "/_admin")  # fmt: skip


def _results(checks):
    return {c.name: c for c in checks}


def test_without_a_rate_rule_only_the_burst_check_fails(weak_server):
    results = _results(verify.run(_target(weak_server)))
    failed = sorted(name for name, c in results.items() if c.passed is False)
    assert failed == ["burst past the edge rate rule"]
    assert results["burst past the edge rate rule"].detail.startswith("30 requests, none blocked")
    assert all(results[name].passed for name in FORGED)  # the parrot saw no forged turn


def test_when_forged_turns_are_kept_the_forged_turn_checks_fail(weak_server, monkeypatch):
    monkeypatch.setattr(signing, "verify", lambda reply, sig, keys: True)  # the weakened server
    results = _results(verify.run(_target(weak_server)))
    assert results[FORGED[0]].passed is False and "CANARY-" in results[FORGED[0]].detail
    assert results[FORGED[1]].passed is False and results[FORGED[1]].detail.startswith(
        "Invoke dropped 0 of 4"
    )
    assert "FAIL" in verify.render(list(results.values()))
