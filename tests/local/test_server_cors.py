"""`chatguard serve` and the CORS allow-list: the preflight starts nothing; POST answers carry
Access-Control-Allow-Origin for a listed origin only."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable

from local.engine.runtime import LocalRuntime
from local.server.uvicorn_server import ChatServer

SITE = "http://site.example"


def call(server: ChatServer, method: str, body: bytes, headers: dict[str, str]):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request(method, "/chat", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.msg, response.read()  # header names: any case
    finally:
        connection.close()


def test_a_preflight_is_answered_by_the_server_and_starts_no_execution(
    runtime: LocalRuntime, serve: Callable[..., ChatServer]
) -> None:
    server = serve(rate_limit=1000, site_origins=(SITE,))
    runtime.wire.reset_counts()
    for origin in (SITE, "http://other.example"):
        status, headers, body = call(server, "OPTIONS", b"", {
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})  # fmt: skip
        assert (status, body) == (204, b"")
        assert headers.get("Access-Control-Allow-Origin") == (origin if origin == SITE else None)
    assert headers.get("Access-Control-Allow-Credentials") is None
    assert runtime.wire.counts()["lambda", "Invoke"] == 0  # no execution at all
    assert runtime.ledger_items() == []


def test_chat_answers_name_only_a_listed_origin(
    runtime: LocalRuntime, serve: Callable[..., ChatServer]
) -> None:
    server = serve(rate_limit=1000, site_origins=(SITE,))
    question = json.dumps({"message": "How do I pick a WAF rate limit?"}).encode()
    base = {"Content-Type": "application/json"}
    status, headers, _ = call(server, "POST", question, {**base, "Origin": SITE})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == SITE
    status, headers, _ = call(server, "POST", question, {**base, "Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in headers
    # Refusals carry it too, so the widget on a listed site can show its own state.
    status, headers, _ = call(server, "POST", b"{}", {**base, "Origin": SITE})
    assert status == 400 and headers["Access-Control-Allow-Origin"] == SITE


def test_without_a_list_the_chat_stays_same_origin(
    runtime: LocalRuntime, serve: Callable[..., ChatServer]
) -> None:
    server = serve(rate_limit=1000)
    status, headers, _ = call(server, "OPTIONS", b"", {"Origin": SITE})
    assert status == 204 and "Access-Control-Allow-Origin" not in headers
    # An OPTIONS without an Origin is no preflight: /chat does not answer that method.
    status, headers, body = call(server, "OPTIONS", b"", {})
    assert status == 405 and headers["Allow"] == "POST" and json.loads(body)["error"]
