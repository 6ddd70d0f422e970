"""The local server fuzzed from steps/lib/request/openapi.json with schemathesis: valid and invalid
requests alike, no generated request gets a 5xx, and none that is refused writes to the
ledger or starts an execution."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis import GenerationMode, checks

from local.engine.runtime import LocalRuntime
from local.server.routes import EdgeOptions
from local.server.uvicorn_server import ChatServer, serve_in_thread
from steps.lib.runtime.settings import Settings

OPENAPI = Path(__file__).resolve().parents[2] / "steps" / "lib" / "request" / "openapi.json"
schema = schemathesis.openapi.from_path(OPENAPI)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=40
)


@pytest.fixture(scope="module")
def fuzz_target(knowledge_dir: Path) -> Iterator[tuple[LocalRuntime, ChatServer]]:
    settings = Settings().replace(
        model_backend="offline", knowledge_dir=knowledge_dir, visitor_message_limit=100_000,
        daily_ceiling_usd="1000", monthly_ceiling_usd="1000",
    )  # fmt: skip
    with LocalRuntime(settings) as runtime:
        server, _ = serve_in_thread(runtime, EdgeOptions(rate_limit=100_000))
        try:
            yield runtime, server
        finally:
            server.shutdown()
            server.server_close()


def _snapshot(runtime: LocalRuntime) -> tuple[int, list[dict[str, Any]]]:
    return runtime.wire.counts()["lambda", "Invoke"], runtime.ledger_items()


@pytest.mark.slow
@schema.parametrize()
def test_no_generated_request_gets_a_5xx_or_writes_when_refused(
    case: Any, fuzz_target: tuple[LocalRuntime, ChatServer]
) -> None:
    runtime, server = fuzz_target
    invocations, ledger = _snapshot(runtime)
    model_calls = runtime.model_calls

    response = case.call(base_url=server.url, timeout=60)

    assert response.status_code < 500, response.text
    # Every other built-in check (documented status, content type, response schema,
    # invalid data refused) except one: a JSON schema cannot say "no control characters",
    # so a schema-valid message may still get the contract's 400.
    case.validate_response(response, excluded_checks=[checks.positive_data_acceptance])
    content_type = {k.lower(): v for k, v in response.headers.items()}["content-type"]
    assert "application/json" in str(content_type)
    body = response.json()
    if response.status_code >= 400:
        assert isinstance(body.get("error"), str) and body["error"]
        assert _snapshot(runtime) == (invocations, ledger)
        assert runtime.model_calls == model_calls
    else:
        assert body["reply"]
