"""On Lambda, a step builds its clients, Powertools and the X-Ray patch at import (INIT).

Each check runs in a fresh interpreter with a Lambda-like environment (function name set,
dummy credentials, no network). botocore's Stubber is attached to the clients built at
import: if the handler built its own client instead, the stub would not answer and the
call would fail. The lazy variant (INIT work switched off) is run on the same harness to
show that the checks can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "chatguard-test",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:9",  # discard port: segments go nowhere
}
SECRET = json.dumps({"current": "visitor-salt-for-tests-0123456789", "previous": None,
                     "rotated_at": 0})  # fmt: skip

PROBE = textwrap.dedent(
    """
    import json, sys, botocore.session
    from botocore.stub import Stubber
    if sys.argv[1] == "lazy":
        import steps.lib.runtime.init_phase as init_phase
        init_phase.at_init = lambda *work: None  # the naive variant: everything on first call
    from steps.lib.runtime import clients, observability
    from steps import quota
    built = {f.__name__: f.cache_info().currsize for f in (clients.dynamodb, clients.ssm)}
    backend = observability._backend.cache_info().currsize
    from botocore.client import BaseClient
    patched = getattr(BaseClient._make_api_call, "_chatguard_traced", False)
    created = []
    original = botocore.session.Session.create_client
    def counting(self, *args, **kwargs):
        created.append(args[0] if args else kwargs.get("service_name"))
        return original(self, *args, **kwargs)
    botocore.session.Session.create_client = counting
    db, ssm = clients.dynamodb(), clients.ssm()
    with Stubber(db) as db_stub, Stubber(ssm) as ssm_stub:
        ssm_stub.add_response("get_parameter", {"Parameter": {"Value": sys.argv[2]}})
        db_stub.add_response("update_item", {"Attributes": {"msgCount": {"N": "1"}}})
        out = quota.handler({"requestId": "r1", "viewerAddress": "203.0.113.7:5"}, None)
        db_stub.assert_no_pending_responses()
        ssm_stub.assert_no_pending_responses()
    print(json.dumps({"built": built, "backend": backend, "xray": patched,
                      "created_after_import": created, "decision": out["decision"]}))
    """
)


def probe(variant: str, **extra: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CHATGUARD_"))}
    env.update(LAMBDA_ENV, **extra)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, variant, SECRET],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_on_lambda_import_builds_clients_powertools_and_xray_and_the_handler_uses_them():
    seen = probe("init")
    assert seen["built"] == {"dynamodb": 1, "ssm": 1}
    assert seen["backend"] == 1 and seen["xray"] is True
    # The first invocation answered through the stubbed INIT-time clients and built none.
    assert seen["created_after_import"] == [] and seen["decision"] == "allowed"


def test_the_lazy_variant_fails_the_same_checks():
    seen = probe("lazy")
    assert seen["built"] == {"dynamodb": 0, "ssm": 0} and seen["backend"] == 0
    # Lazily, every client is built after import, on the first invocation.
    assert sorted(seen["created_after_import"]) == ["dynamodb", "ssm"]  # type: ignore[arg-type]


@pytest.mark.parametrize("module", ["steps.invoke", "steps.cost_gate", "steps.retrieve"])
def test_a_bad_setting_does_not_crash_init(module):
    # INIT must not raise: the first invocation fails closed with the line naming the setting.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CHATGUARD_"))}
    env.update(LAMBDA_ENV, CHATGUARD_BEDROCK_READ_TIMEOUT_SECONDS="soon",
               CHATGUARD_KNOWLEDGE_DIR=str(ROOT / "no-such-index"))  # fmt: skip
    code = f"import {module}; print('imported')"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr[-500:]


def test_offline_import_builds_nothing_so_tests_choose_their_clients():
    code = (
        "from steps.lib.runtime import clients, observability; from steps import quota, cost_gate; "
        "print(clients.dynamodb.cache_info().currsize, clients.ssm.cache_info().currsize, "
        "observability._backend.cache_info().currsize)"
    )
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        check=True, timeout=120,
    )  # fmt: skip
    assert out.stdout.split() == ["0", "0", "0"]


@pytest.mark.parametrize("module", ["steps.retrieve", "steps.degraded"])
def test_on_lambda_the_retrieval_steps_load_the_index_at_import(module):
    code = (
        f"import sys, {module}; name = 'steps.lib.grounding.knowledge'; "
        "loaded = name in sys.modules; "
        "print(loaded and sys.modules[name].load_knowledge.cache_info().currsize)"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CHATGUARD_"))}
    # The offline backend, so S4's embedder matches the index `make index` built.
    on_lambda = {**base, **LAMBDA_ENV, "CHATGUARD_MODEL_BACKEND": "offline"}
    for env, expected in ((on_lambda, "1"), (base, "False")):
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
            check=True, timeout=120,
        )  # fmt: skip
        assert out.stdout.strip().splitlines()[-1] == expected
