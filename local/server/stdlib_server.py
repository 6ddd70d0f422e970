"""The same contract (local/server/routes.py) on the standard library's ThreadingHTTPServer.

Not what `chatguard serve` runs: it is kept so the benchmark (tests/bench/server.py) and
the load test can measure it beside uvicorn on the same harness. ``queue_size`` is the
listen backlog: 5 is the standard library's default (what `serve` used to run), a large
value is the "tuned" variant.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from local.engine.runtime import LocalRuntime

from .routes import Dispatcher, EdgeOptions, Request

STDLIB_QUEUE_SIZE = 5


class StdlibChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        runtime: LocalRuntime,
        options: EdgeOptions,
        *,
        queue_size: int = STDLIB_QUEUE_SIZE,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.request_queue_size = queue_size
        self.dispatcher = Dispatcher(runtime, options)
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Silent: a client that left (reset, broken pipe) is counted by the load harness,
        and socketserver would print a traceback with the client address."""

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: StdlibChatServer
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle or trickling connection holds its thread this long per read

    def _handle(self) -> None:
        path = self.path.split("?", 1)[0]
        limit = self.server.dispatcher.body_limit(self.command, path)
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(min(length, limit + 1)) if length else b""
        if length > len(body):
            self.close_connection = True  # the rest of the body is left unread
        headers = {k.lower(): v for k, v in self.headers.items()}
        peer = (str(self.client_address[0]), int(self.client_address[1]))
        response = self.server.dispatcher(Request(self.command, path, headers, body, peer))
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_OPTIONS = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the standard library's access log prints the client address."""


def stdlib_serve_in_thread(
    runtime: LocalRuntime, options: EdgeOptions, *, queue_size: int = STDLIB_QUEUE_SIZE
) -> tuple[StdlibChatServer, threading.Thread]:
    server = StdlibChatServer(("127.0.0.1", 0), runtime, options, queue_size=queue_size)
    thread = threading.Thread(target=server.serve_forever, name="stdlib-serve", daemon=True)
    thread.start()
    return server, thread
