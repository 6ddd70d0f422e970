"""The local server under load, on 127.0.0.1 with a free port: 128 visitors sending at once
all get answers (the standard library's server with its backlog of 5 resets some on the
same harness), idle or trickling connections hold no thread and are cut off, a slow body
gets a 408, keep-alive works, and past the queue bound the answer is the fail-closed 503.
Every loop here is bounded in count and time."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from local.engine.results import FAIL_CLOSED
from local.engine.runtime import LocalRuntime
from local.server import uvicorn_server as server_module
from local.server.routes import EdgeOptions
from local.server.stdlib_server import stdlib_serve_in_thread
from local.server.uvicorn_server import ChatServer, read_body
from tests.load import burst

from .conftest import QUESTION

CONTRACT_STATUSES = {200, 400, 403, 503}
CLIENTS, EACH = 128, 2
# A bound on a failure only: the 256 messages take about 10 s at the 25 answers a second
# docs/benchmarks.md measured on a loaded 2-CPU machine, so 240 s is 24x that.
BURST_DEADLINE_SECONDS = 240
IDLE_CONNECTIONS = 40


@pytest.fixture
def roomy(make_runtime: Callable[..., LocalRuntime]) -> LocalRuntime:
    """Ceilings and the visitor limit out of the way: every message can be answered."""
    return make_runtime(
        visitor_message_limit=100_000, daily_ceiling_usd="1000", monthly_ceiling_usd="1000"
    )


OPTIONS = {"rate_limit": 100_000, "trust_viewer_address": True}


@pytest.mark.slow
def test_128_visitors_at_once_all_get_an_answer(
    roomy: LocalRuntime, serve_factory: Callable[..., ChatServer]
) -> None:
    server = serve_factory(roomy, **OPTIONS)
    result = burst(server.url, CLIENTS, EACH, deadline_seconds=BURST_DEADLINE_SECONDS)
    assert result.unfinished == 0
    assert dict(result.errors) == {}  # no reset, no timeout
    assert result.answered == CLIENTS * EACH
    assert set(result.statuses) <= CONTRACT_STATUSES, result.statuses
    assert result.statuses[200] == CLIENTS * EACH  # nothing in the way of an answer here


@pytest.mark.slow
def test_the_same_burst_resets_visitors_on_the_standard_librarys_server(
    roomy: LocalRuntime,
) -> None:
    server, thread = stdlib_serve_in_thread(roomy, EdgeOptions(**OPTIONS))
    try:
        result = burst(server.url, CLIENTS, EACH, deadline_seconds=BURST_DEADLINE_SECONDS)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    # The harness sees resets when they happen. This outcome rests on scheduling: on 128
    # clients connecting at once against a listen backlog of 5, 25x over it (the benchmark
    # in docs/benchmarks.md saw 224 of 512 requests reset at 128 clients).
    assert sum(result.errors.values()) > 0, result


def _half_open(url: str, count: int) -> list[socket.socket]:
    """Connections that sent part of a request head and then nothing."""
    port = int(url.rsplit(":", 1)[1])
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"POST /chat HTTP/1.1\r\nHost: x\r\n")
        sockets.append(sock)
    return sockets


# How long a server may take to accept the idle connections: they are accepted in
# milliseconds, and this bounds only a failure, so it is far beyond any loaded machine.
ACCEPT_SECONDS = 30


def _threads_after(
    open_connections: Callable[[], list[socket.socket]], held: Callable[[int], bool]
) -> tuple[int, Any]:
    """Thread growth once the server holds the connections (``held(grown)``), waited for
    rather than slept for: a fixed sleep could end before a loaded machine accepted them."""
    before = threading.active_count()
    sockets = open_connections()
    stop_at = time.monotonic() + ACCEPT_SECONDS
    while not held(threading.active_count() - before) and time.monotonic() < stop_at:
        time.sleep(0.01)
    return threading.active_count() - before, sockets


def test_idle_connections_hold_no_thread(
    runtime: LocalRuntime, serve: Callable[..., ChatServer]
) -> None:
    server = serve()
    grown, sockets = _threads_after(
        lambda: _half_open(server.url, IDLE_CONNECTIONS),
        held=lambda _grown: server.open_connections >= IDLE_CONNECTIONS,
    )
    held = server.open_connections
    for sock in sockets:
        sock.close()
    assert held == IDLE_CONNECTIONS, held  # all accepted, so the count below means something
    assert grown < 5  # the event loop holds them, not threads
    # and the server still answers while they sat there
    assert _post(server.url, QUESTION)[0] == 200


def test_the_standard_librarys_server_holds_a_thread_per_idle_connection(
    runtime: LocalRuntime,
) -> None:
    server, thread = stdlib_serve_in_thread(runtime, EdgeOptions(), queue_size=64)
    try:
        grown, sockets = _threads_after(
            lambda: _half_open(server.url, IDLE_CONNECTIONS),
            held=lambda grown: grown >= IDLE_CONNECTIONS,
        )
        for sock in sockets:
            sock.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert grown >= IDLE_CONNECTIONS


def _closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bytes | None:
    """What the server sent before closing, or None if it kept the connection open."""
    sock.settimeout(0.25)
    received = b""
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        if trickle:
            try:
                sock.sendall(trickle)
            except OSError:
                return received
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return received
        if not chunk:
            return received
        received += chunk
    return None


# The slow-client tests run a real server's cut-off (1 s here) in real time: that duration
# is the point. They wait up to 30x it for the close, so a loaded machine still sees it.
CUT_OFF_SECONDS = 1.0
CLOSE_WAIT_SECONDS = 30 * CUT_OFF_SECONDS


def test_a_trickled_request_head_is_cut_off(
    runtime: LocalRuntime, serve: Callable[..., ChatServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "HEAD_SECONDS", CUT_OFF_SECONDS)
    server = serve()
    (sock,) = _half_open(server.url, 1)
    try:
        # A header byte every 1/4 s: each keeps the connection busy, none completes the head.
        assert _closed_within(sock, CLOSE_WAIT_SECONDS, trickle=b"X") is not None
    finally:
        sock.close()
    (silent,) = _half_open(server.url, 1)
    try:
        assert _closed_within(silent, CLOSE_WAIT_SECONDS) is not None
    finally:
        silent.close()


def test_a_slow_body_gets_a_408_and_no_execution(
    runtime: LocalRuntime, serve: Callable[..., ChatServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "BODY_SECONDS", CUT_OFF_SECONDS)
    server = serve()
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /chat HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        received = _closed_within(sock, CLOSE_WAIT_SECONDS)
    assert received is not None and received.startswith(b"HTTP/1.1 408"), received
    assert runtime.ledger_items() == [] and runtime.model_calls == 0


def test_keep_alive_serves_several_requests_on_one_connection(
    runtime: LocalRuntime, serve: Callable[..., ChatServer]
) -> None:
    server = serve()
    host, port = server.server_address
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("GET", "/widget/chatguard.js")
        first = connection.getresponse()
        first.read()
        sock = connection.sock
        connection.request("POST", "/chat", body=json.dumps(QUESTION))
        second = connection.getresponse()
        second.read()
        assert (first.status, second.status) == (200, 200)
        assert connection.sock is sock and sock is not None  # the same socket, not a reconnect
        assert second.getheader("Connection") != "close"
    finally:
        connection.close()


def test_past_the_queue_bound_the_answer_is_the_fail_closed_503(
    runtime: LocalRuntime, serve: Callable[..., ChatServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "MAX_PENDING", 0)
    server = serve()
    status, body = _post(server.url, QUESTION)
    assert (status, body) == (503, FAIL_CLOSED)
    assert runtime.ledger_items() == [] and runtime.model_calls == 0


def _run(coroutine: Any) -> Any:
    """asyncio.run on a thread of its own: Playwright's sync API may keep a loop running on
    this one when the browser tests share the worker."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(coroutine)))
    thread.start()
    thread.join(timeout=30)
    return result[0]


def _receiver(chunks: list[bytes]) -> Callable[[], Any]:
    messages: Iterator[tuple[int, bytes]] = iter(enumerate(chunks, 1))

    async def receive() -> dict[str, Any]:
        n, chunk = next(messages)
        return {"type": "http.request", "body": chunk, "more_body": n < len(chunks)}

    return receive


@pytest.mark.parametrize(("size", "kept", "complete"), [(10, 10, True), (5000, 101, True)])
def test_a_body_is_kept_only_up_to_its_limit(size: int, kept: int, complete: bool) -> None:
    chunks = [b"a" * 1000 for _ in range(size // 1000)] or [b"a" * size]
    body, whole = _run(read_body(_receiver(chunks), 100))
    assert (len(body), whole) == (kept, complete)


def test_a_flood_of_body_is_dropped_and_the_connection_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "DRAIN_LIMIT", 10_000)
    chunks = [b"a" * 1000 for _ in range(1000)]  # 1 MB offered
    read: list[int] = []
    inner = _receiver(chunks)

    async def counting() -> dict[str, Any]:
        message = await inner()
        read.append(len(message["body"]))
        return message

    body, whole = _run(read_body(counting, 100))
    assert (len(body), whole) == (101, False)
    assert sum(read) <= 11_000  # stopped reading soon after the drain limit


def _post(url: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    port = int(url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/chat", body=json.dumps(payload))
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()
