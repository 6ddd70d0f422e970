"""`chatguard serve`: the HTTP contract (local/server/routes.py) on uvicorn, on loopback.

Why uvicorn: the standard library's server listens with a backlog of 5 and starts a thread
per connection; with 64 or 128 visitors sending at once it resets a share of them, where
uvicorn resets none. docs/benchmarks.md ("Local server") has both measured on the same
harness. Here:

- one event loop owns every socket, so an idle or slow connection costs a few kilobytes,
  never a thread; the executions run on a fixed pool of `WORKERS` threads;
- keep-alive between requests (idle connections close after `KEEP_ALIVE_SECONDS`);
- a slow client is cut off: the request head must arrive within `HEAD_SECONDS` of the
  connection (or of the previous answer) and the body within `BODY_SECONDS`;
- memory stays bounded under a flood: a body is kept only up to the route's limit (the
  rest is read and dropped, up to `DRAIN_LIMIT`, then the connection is closed), h11
  bounds the request head, and past `MAX_CONNECTIONS` connections or `MAX_PENDING`
  queued requests the answer is the contract's fail-closed 503.

No address is ever logged: uvicorn's access log (which prints the peer) is off, and the
access log here names the method, path and status only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from local.engine.results import FAIL_CLOSED
from local.engine.runtime import LocalRuntime

from .listening import BACKLOG, listen
from .routes import (
    CrossOrigin,
    Dispatcher,
    EdgeOptions,
    Request,
    Response,
    json_response,
)

__all__ = ["ChatServer", "EdgeOptions", "listen", "serve_in_thread"]

log = logging.getLogger("chatguard.local.server")
WORKERS = 32  # threads running executions: the pipeline is CPU-bound here, more only contend
MAX_PENDING = 1024  # requests queued for a worker; past this, a 503 at once
MAX_CONNECTIONS = 2048  # open connections; uvicorn answers 503 past this
KEEP_ALIVE_SECONDS = 5
HEAD_SECONDS = 10.0
BODY_SECONDS = 10.0
DRAIN_LIMIT = 8 * 1024 * 1024  # read (and drop) an oversize body up to this, then hang up
SHUTDOWN_GRACE_SECONDS = 3

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ChatServer:
    """The local server: bound at construction (so a taken port fails here) unless handed
    a socket `listen` already bound, served by `serve_forever`, stopped by `shutdown` from
    another thread."""

    def __init__(
        self,
        address: tuple[str, int],
        runtime: LocalRuntime,
        options: EdgeOptions,
        *,
        cross_origin: CrossOrigin | None = None,
        site_dir: Path | None = None,
        permalinks: str | None = None,
        workers: int = WORKERS,
        sock: socket.socket | None = None,
    ) -> None:
        self.dispatcher = Dispatcher(
            runtime, options, cross_origin, site_dir=site_dir, permalinks=permalinks
        )
        self.socket = sock if sock is not None else listen(address)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="chatguard-exec")
        app = ContractApp(self.dispatcher, self._executor)
        config = uvicorn.Config(
            app, http=DeadlineH11, lifespan="off", access_log=False, log_config=None,
            timeout_keep_alive=KEEP_ALIVE_SECONDS, limit_concurrency=MAX_CONNECTIONS,
            backlog=BACKLOG, timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
            server_header=False, date_header=False,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def open_connections(self) -> int:
        """Connections the event loop holds now (uvicorn's own count)."""
        return len(self._server.server_state.connections)

    def serve_forever(self) -> None:
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self, timeout: float = 30) -> None:
        self._server.should_exit = True
        self._stopped.wait(timeout)

    def server_close(self) -> None:
        self.socket.close()
        self._executor.shutdown(wait=False, cancel_futures=True)


class ContractApp:
    """ASGI: read a bounded body, hand the request to a worker, write the answer."""

    def __init__(self, dispatcher: Dispatcher, executor: ThreadPoolExecutor) -> None:
        self.dispatcher = dispatcher
        self.executor = executor
        self.pending = 0  # touched on the event loop only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        limit = self.dispatcher.body_limit(method, path)
        try:
            async with asyncio.timeout(BODY_SECONDS):
                body, complete = await read_body(receive, limit)
        except TimeoutError:
            await reply(send, method, json_response(408, {"error": "request body too slow"}), True)
            return
        if self.pending >= MAX_PENDING:
            await reply(send, method, json_response(503, FAIL_CLOSED), True)
            return
        client = scope.get("client") or ("", 0)
        request = Request(method, path, headers, body, (str(client[0]), int(client[1])))
        self.pending += 1
        try:
            loop = asyncio.get_running_loop()
            response = await loop.run_in_executor(self.executor, self.dispatcher, request)
        finally:
            self.pending -= 1
        access_log(method, path, response.status)
        await reply(send, method, response, close=not complete)


async def read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The first `limit + 1` bytes of the body (one more than a route accepts, so it can
    say "too large"), and whether the whole body was read (the rest is dropped)."""
    kept, seen = bytearray(), 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(kept), False  # the client went away
        chunk = message.get("body", b"")
        seen += len(chunk)
        if len(kept) <= limit:
            kept += chunk[: limit + 1 - len(kept)]
        if not message.get("more_body", False):
            return bytes(kept), True
        if seen > DRAIN_LIMIT:
            return bytes(kept), False


async def reply(send: Send, method: str, response: Response, close: bool = False) -> None:
    headers = [
        (b"content-type", response.content_type.encode("latin-1")),
        (b"content-length", str(len(response.body)).encode()),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    body = b"" if method == "HEAD" else response.body
    await send({"type": "http.response.body", "body": body, "more_body": False})


def access_log(method: str, path: str, status: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info(json.dumps({"method": method, "path": path[:100], "status": status}))


class DeadlineH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline for the request head: uvicorn times out an
    idle keep-alive connection, but not one that trickles its headers a byte at a time."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request head arrived: the body has its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._cut_off)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cut_off(self) -> None:
        self._head_timer = None
        with contextlib.suppress(Exception):
            self.transport.close()


def serve_in_thread(
    runtime: LocalRuntime, options: EdgeOptions, host: str = "127.0.0.1", port: int = 0
) -> tuple[ChatServer, threading.Thread]:
    """Start a server on a background thread (tests, the benchmark); port 0 = a free port."""
    server = ChatServer((host, port), runtime, options)
    thread = threading.Thread(target=server.serve_forever, name="chatguard-serve", daemon=True)
    thread.start()
    return server, thread
