"""`chatguard serve`: the HTTP contract (steps/lib/openapi.json) on loopback.

- ``POST /chat``: the edge, then the state machine. Plays CloudFront + WAF + API Gateway:
  a per-IP rate rule (403, as WAF answers), the body-size limit and request validation
  (400 before any execution), then injects the secret origin header.
- ``POST /_origin/chat``: the API Gateway URL called directly, skipping CloudFront: no
  origin header is injected and no rate rule applies; the caller's own X-Origin-Verify (if
  any) is what S1 sees, so a direct call gets 403.
- ``GET`` anything else: the demo site and widget (``local.site.handle_get``).
- ``/_admin/...``: the operator's local API (``local.admin.handle``), loopback peers only.

The viewer is the socket peer (``ip:port``) unless ``trust_viewer_address`` is on (local
use only): then a ``CloudFront-Viewer-Address`` request header names it, so tests can act
as many visitors. Malformed input never gets a 5xx: anything unexpected answers the
fail-closed 503 of the contract. No address is ever logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from steps.lib.edge_blocks import RATE_BLOCKED, SIZE_BLOCKED

from . import cors
from .edge import EdgeRefusal, RateRule, address_key, parse_body, socket_address
from .results import FAIL_CLOSED
from .runtime import LocalRuntime

log = logging.getLogger("chatguard.local.server")
DRAIN_LIMIT = 8 * 1024 * 1024  # read (and drop) an oversize body up to this, then hang up
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "X-Frame-Options": "SAMEORIGIN",
}
LOOPBACK = frozenset({"127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class EdgeOptions:
    rate_limit: int = 20
    rate_window_seconds: float = 120
    trust_viewer_address: bool = False
    site_origins: tuple[str, ...] = ()  # cross-origin embedding (local/cors.py)


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], runtime: LocalRuntime, options: EdgeOptions):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.runtime = runtime
        self.options = options
        self.rate_rule = RateRule(options.rate_limit, options.rate_window_seconds)
        super().__init__(address, ChatHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"
    server_version = "chatguard-local"
    sys_version = ""
    timeout = 30  # seconds a connection may sit idle or trickle a request (slow clients)

    # -- routing -----------------------------------------------------------------------
    def do_POST(self) -> None:
        self._guarded(self._post)

    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_PUT(self) -> None:
        self._guarded(self._other)

    def do_OPTIONS(self) -> None:
        self._guarded(self._options)

    do_DELETE = do_PATCH = do_TRACE = do_CONNECT = do_PUT
    do_HEAD = do_GET  # the same answer without its body (see _send)

    def _guarded(self, route: Any) -> None:
        try:
            route()
        except EdgeRefusal as refusal:
            self._json(refusal.status, refusal.payload)
        except Exception as exc:  # fail closed: a bug here answers 503, never a 500
            log.error(json.dumps({"server_error": type(exc).__name__}))
            self._json(503, FAIL_CLOSED)

    def _post(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/chat":
            self._chat_at_edge()
        elif path == "/_origin/chat":
            self._chat_at_origin()
        elif path.startswith("/_admin/"):
            self._admin("POST", path)
        else:
            self._drain()
            self._json(404, {"error": "not found"})

    def _get(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/chat", "/_origin/chat"):
            self._json(405, {"error": "use POST with a JSON body"}, allow="POST")
        elif path.startswith("/_admin/"):
            self._admin("GET", path)
        else:
            self._site(path)

    def _options(self) -> None:
        origin, allowed = self.headers.get("Origin"), self.server.options.site_origins
        if (
            self.path.split("?", 1)[0] != "/chat"
            or not cors.decide(origin, "OPTIONS", allowed).preflight
        ):
            return self._other()
        self._drain()
        self._send(204, "application/json", b"")  # CORS preflight: answered here, nothing runs

    def _other(self) -> None:
        self._drain()
        self._json(405, {"error": "method not allowed"}, allow=_allowed(self.path))

    # -- the chat API ------------------------------------------------------------------
    def _chat_at_edge(self) -> None:
        viewer = self._viewer_address()
        if not self.server.rate_rule.allow(address_key(viewer)):
            self._drain()
            raise EdgeRefusal.waf(RATE_BLOCKED)
        body = parse_body(self._read_body(), self.server.runtime.settings)
        outcome = self.server.runtime.send(
            body, ip="", origin_ok=True, headers={"CloudFront-Viewer-Address": viewer}
        )
        self._json(outcome.status, outcome.body)

    def _chat_at_origin(self) -> None:
        body = parse_body(self._read_body(), self.server.runtime.settings)
        headers = {"X-Origin-Verify": self.headers.get("X-Origin-Verify", "")}
        viewer = self.headers.get("CloudFront-Viewer-Address")
        if viewer:
            headers["CloudFront-Viewer-Address"] = viewer
        outcome = self.server.runtime.send(body, ip="", origin_ok=False, headers=headers)
        self._json(outcome.status, outcome.body)

    def _viewer_address(self) -> str:
        if self.server.options.trust_viewer_address:
            given = self.headers.get("CloudFront-Viewer-Address")
            if given:
                return given
        host, port = self.client_address[:2]
        return socket_address(host, port)

    # -- delegation --------------------------------------------------------------------
    def _site(self, path: str) -> None:
        try:
            from local import site
        except ImportError:
            self._json(404, {"error": "not found"})
            return
        answer = site.handle_get(path)
        if answer is None:
            self._json(404, {"error": "not found"})
            return
        status, content_type, payload = answer
        self._send(status, content_type, payload)

    def _admin(self, method: str, path: str) -> None:
        raw = self._read_body() if method == "POST" else b""
        if self.client_address[0] not in LOOPBACK:
            raise EdgeRefusal(403, "the admin API answers loopback callers only")
        try:
            from local import admin
        except ImportError:
            self._json(404, {"error": "not found"})
            return
        body = _admin_body(raw)
        status, payload = admin.handle(method, path, body, self.server.runtime)
        self._json(status, payload)

    # -- bodies and replies ------------------------------------------------------------
    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise EdgeRefusal(400, "send the body with a Content-Length, not chunked")
        length = self._content_length()
        limit = self.server.runtime.settings.body_max_bytes
        if length > limit:
            self._drain(length)
            raise EdgeRefusal.waf(SIZE_BLOCKED)  # as WAF's size rule answers it
        return self.rfile.read(length) if length else b""

    def _content_length(self) -> int:
        if "Content-Length" not in self.headers:
            self.close_connection = True  # whatever follows is not a request we can frame
        text = self.headers.get("Content-Length", "0").strip() or "0"
        if not text.isdigit() or len(text) > 12:
            self.close_connection = True
            raise EdgeRefusal(400, "Content-Length is not a number")
        return int(text)

    def _drain(self, length: int | None = None) -> None:
        """Read and drop a body we refuse, so the client gets our answer, not a reset."""
        if length is None:
            try:
                length = self._content_length()
            except EdgeRefusal:
                return
        if length > DRAIN_LIMIT:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 65536))
            if not chunk:
                break
            length -= len(chunk)

    def _json(self, status: int, payload: dict[str, Any], **extra: str) -> None:
        data = json.dumps(payload).encode("utf-8")
        headers = {k.capitalize(): v for k, v in extra.items()}
        self._send(status, "application/json", data, headers)

    def _send(
        self, status: int, content_type: str, data: bytes, extra: dict[str, str] | None = None
    ) -> None:
        if (getattr(self, "path", "") or "").split("?", 1)[0] == "/chat":  # local/cors.py
            origin, allowed = self.headers.get("Origin"), self.server.options.site_origins
            decision = cors.decide(origin, self.command or "", allowed)
            extra = {**decision.headers, **(extra or {})}
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (unknown method, bad request line, huge headers) as
        JSON, and never a 5xx: an unknown method is a 405, a broken request a 400."""
        status = 405 if code == 501 else (400 if code >= 500 else code)
        self.close_connection = True
        extra = {"allow": _allowed(getattr(self, "path", "") or "")} if status == 405 else {}
        with contextlib.suppress(OSError):  # the client went away
            self._json(status, {"error": (message or "bad request")[:200]}, **extra)

    def log_message(self, format: str, *args: Any) -> None:
        """Access log without the client address (BaseHTTPRequestHandler prints it)."""
        log.info(
            json.dumps(
                {
                    "method": self.command,
                    "path": self.path.split("?", 1)[0][:100],
                    "status": args[1] if len(args) > 1 else None,
                }
            )
        )

    def log_error(self, format: str, *args: Any) -> None:
        log.warning(json.dumps({"http_error": (format % args)[:200]}))


def _allowed(path: str) -> str:
    """The methods a path answers (the Allow header of a 405, as RFC 9110 requires)."""
    path = path.split("?", 1)[0]
    if path in ("/chat", "/_origin/chat"):
        return "POST"
    return "GET, POST" if path.startswith("/_admin/") else "GET"


def _admin_body(raw: bytes) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise EdgeRefusal(400, "admin request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise EdgeRefusal(400, "admin request body must be a JSON object")
    return body


def serve_in_thread(
    runtime: LocalRuntime, options: EdgeOptions, host: str = "127.0.0.1", port: int = 0
) -> tuple[ChatServer, threading.Thread]:
    """Start a server on a background thread (tests, the benchmark); port 0 = a free port."""
    server = ChatServer((host, port), runtime, options)
    thread = threading.Thread(target=server.serve_forever, name="chatguard-serve", daemon=True)
    thread.start()
    return server, thread
