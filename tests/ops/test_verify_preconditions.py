"""`verify --local` against a real server whose preconditions are not met: a FAIL means a
defense failed, and every row is still printed, saying why it could not run."""

from __future__ import annotations

from local.engine.runtime import LocalRuntime
from local.server.routes import EdgeOptions
from local.server.uvicorn_server import serve_in_thread
from ops import verify
from steps.lib.runtime.settings import Settings, cdk_context


def test_after_the_operators_own_messages_nothing_fails_and_no_row_disappears():
    """This address has used its messages (as after 20 chats from the operator's own
    address): the forged-turn rows say why they cannot run, the rest still pass."""
    settings = Settings.from_mapping(cdk_context()["chatguard"]).replace(
        model_backend="offline", visitor_message_limit=2
    )
    with LocalRuntime(settings) as runtime:
        server, thread = serve_in_thread(runtime, EdgeOptions(rate_limit=40))
        url = server.url
        target = verify.Target(
            url + "/chat", url + "/_origin/chat", burst=60, burst_seconds=0.0,
            reserve_micros=1, admin_url=url + "/_admin",
        )  # fmt: skip
        try:
            first = verify.run(target)  # its baseline and forged turns spend both messages
            checks = verify.run(target)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
    assert [c.name for c in first] == [c.name for c in checks] == verify.check_names(target)
    assert [c.name for c in first if c.passed is not True] == []
    assert [c.name for c in checks if c.passed is False] == []
    for name in (verify.BASELINE, verify.FORGED, verify.DROPPED):
        row = next(c for c in checks if c.name == name)
        assert row.passed is None and "used its messages" in row.detail, row
    assert verify.exit_code(checks) == verify.EXIT_INCOMPLETE
