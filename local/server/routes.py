"""The HTTP contract of `chatguard serve` as one pure dispatch: a `Request` in, a `Response`
out, whatever server carries the bytes (local/server/uvicorn_server.py; the benchmark also
runs it on the standard library's server to compare).

- ``POST /chat``: the edge, then the state machine. Plays CloudFront + WAF + API Gateway:
  a per-IP rate rule (403, as WAF answers), the body-size limit and request validation
  (400 before any execution), then injects the secret origin header.
- ``POST /_origin/chat``: the API Gateway URL called directly, skipping CloudFront: no
  origin header is injected and no rate rule applies; the caller's own X-Origin-Verify (if
  any) is what S1 sees, so a direct call gets 403.
- ``GET`` anything else: the demo site and widget (``local.server.site.handle_get``).
- ``/_admin/...``: the operator's local API (``local.server.admin.handle``), loopback peers only;
  ``POST /_admin/rate-rule/release`` drops the caller's own count from the rate rule, so
  `chatguard verify --local`'s burst does not lock the operator out of the widget.

Every answer passes through `Dispatcher.__call__`, the one place where a cross-origin
policy hooks in (`CrossOrigin`): it may answer a preflight before any route runs and add
headers to any answer. The viewer is the socket peer (``ip:port``) unless
``trust_viewer_address`` is on (local use only): then a ``CloudFront-Viewer-Address``
request header names it, so tests can act as many visitors. Malformed input never gets a
5xx: anything unexpected answers the fail-closed 503 of the contract. No address is ever
logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from local.engine.edge import EdgeRefusal, RateRule, address_key, parse_body, socket_address
from local.engine.results import FAIL_CLOSED
from steps.lib.request.edge_blocks import RATE_BLOCKED

from . import cors

log = logging.getLogger("chatguard.local.server")
# One line per chat message (`chatguard serve`'s default output; local/commands/render.py
# prints it).
messages = logging.getLogger("chatguard.local.messages")
SECURITY_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    ("X-Frame-Options", "SAMEORIGIN"),
)
LOOPBACK = frozenset({"127.0.0.1", "::1"})
CHAT_PATHS = ("/chat", "/_origin/chat")
ADMIN_BODY_MAX_BYTES = 16 * 1024
RELEASE_PATH = "/_admin/rate-rule/release"
JSON = "application/json"
OPENAPI_PATH = "/openapi.json"  # the contract, as README's "The HTTP contract" says


@dataclass(frozen=True, slots=True)
class EdgeOptions:
    rate_limit: int = 20
    rate_window_seconds: float = 120
    trust_viewer_address: bool = False
    site_origins: tuple[str, ...] = ()  # cross-origin embedding (local/server/cors.py)


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # without the query string
    headers: Mapping[str, str]  # names in lower case
    body: bytes  # at most `Dispatcher.body_limit(...) + 1` bytes: the server keeps no more
    peer: tuple[str, int]  # the socket peer: never logged


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = field(default=())

    def with_headers(self, *extra: tuple[str, str]) -> Response:
        return replace(self, headers=self.headers + extra)


class CrossOrigin(Protocol):
    """A cross-origin policy: answer a preflight itself, and add headers to any answer."""

    def preflight(self, request: Request) -> Response | None: ...

    def headers(self, request: Request) -> tuple[tuple[str, str], ...]: ...


class ListedOrigins:
    """CORS on POST /chat for the listed site origins only (local/server/cors.py), as CloudFront's
    response headers policy applies it on AWS: a preflight is answered here (204, nothing
    runs); only a listed origin gets Access-Control-Allow-Origin."""

    def __init__(self, origins: tuple[str, ...]) -> None:
        self.origins = origins

    def preflight(self, request: Request) -> Response | None:
        if request.method != "OPTIONS" or request.path != "/chat":
            return None
        # A browser's preflight (an OPTIONS with an Origin) gets 204 whatever the origin;
        # only a listed one gets Access-Control-Allow-Origin (headers below), so the browser
        # sends the POST for listed origins only. An OPTIONS without an Origin gets the 405.
        origin = request.headers.get("origin")
        if not cors.decide(origin, "OPTIONS", self.origins).preflight:
            return None
        if origin not in self.origins:
            # The browser will not send the POST, and the page only learns "failed to
            # fetch": the server's log is where the operator can read why, and the fix.
            messages.info(refused_origin_line(origin))
        return Response(204, JSON, b"")

    def headers(self, request: Request) -> tuple[tuple[str, str], ...]:
        if request.path != "/chat":
            return ()
        decision = cors.decide(request.headers.get("origin"), request.method, self.origins)
        return tuple(decision.headers.items())


def json_response(status: int, payload: Mapping[str, Any], *extra: tuple[str, str]) -> Response:
    return Response(status, JSON, json.dumps(payload).encode("utf-8"), tuple(extra))


class Dispatcher:
    """The whole contract: `dispatcher(request)` is the answer, headers included."""

    def __init__(
        self,
        runtime: Any,
        options: EdgeOptions,
        cross_origin: CrossOrigin | None = None,
        *,
        site_dir: Path | None = None,
        permalinks: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.site_dir = site_dir  # None: examples/site, or CHATGUARD_SITE_DIR
        self.permalinks = permalinks  # None: cdk.json's; serve passes the index's own
        self.options = options
        self.rate_rule = RateRule(options.rate_limit, options.rate_window_seconds)
        self.cross_origin: CrossOrigin = cross_origin or ListedOrigins(options.site_origins)

    def body_limit(self, method: str, path: str) -> int:
        """How many body bytes a route takes. A server keeps one more (to tell "too large")
        and no others: local/server/uvicorn_server.py reads the rest only to drop it (past its
        drain limit it hangs up), local/server/stdlib_server.py leaves it unread and closes the
        connection."""
        if method != "POST":
            return 0
        if path in CHAT_PATHS:
            return int(self.runtime.settings.body_max_bytes)
        return ADMIN_BODY_MAX_BYTES if path.startswith("/_admin/") else 0

    def __call__(self, request: Request) -> Response:
        try:
            answer = self.cross_origin.preflight(request) or self._route(request)
        except EdgeRefusal as refusal:
            answer = json_response(refusal.status, refusal.payload)
        except Exception as exc:  # fail closed: a bug here answers 503, never a 500
            log.error(json.dumps({"server_error": type(exc).__name__}))
            answer = json_response(503, FAIL_CLOSED)
        return answer.with_headers(*SECURITY_HEADERS, *self.cross_origin.headers(request))

    # -- routing -----------------------------------------------------------------------
    def _route(self, request: Request) -> Response:
        method, path = request.method, request.path
        if method == "POST":
            if path == "/chat":
                return self._chat_at_edge(request)
            if path == "/_origin/chat":
                return self._chat_at_origin(request)
        if path.startswith("/_admin/") and method in ("GET", "POST"):
            return self._admin(request)
        if method in ("GET", "HEAD"):
            if path in CHAT_PATHS:
                return refusal_405("use POST with a JSON body", path)
            if path == OPENAPI_PATH:
                return Response(200, JSON, openapi_document())
            return self._site(path)
        if method == "POST":
            return json_response(404, {"error": "not found"})
        return refusal_405("method not allowed", path)

    # -- the chat API ------------------------------------------------------------------
    def _chat_at_edge(self, request: Request) -> Response:
        viewer = self._viewer_address(request)
        if not self.rate_rule.allow(address_key(viewer)):
            raise EdgeRefusal.waf(RATE_BLOCKED)  # the web ACL's JSON block
        body = parse_body(request.body, self.runtime.settings)
        outcome = self.runtime.send(
            body, ip="", origin_ok=True, headers={"CloudFront-Viewer-Address": viewer}
        )
        messages.info(message_line(request.path, outcome.status, outcome.body, outcome.ms))
        return json_response(outcome.status, outcome.body)

    def _chat_at_origin(self, request: Request) -> Response:
        body = parse_body(request.body, self.runtime.settings)
        headers = {"X-Origin-Verify": request.headers.get("x-origin-verify", "")}
        viewer = request.headers.get("cloudfront-viewer-address")
        if viewer:
            headers["CloudFront-Viewer-Address"] = viewer
        outcome = self.runtime.send(body, ip="", origin_ok=False, headers=headers)
        messages.info(message_line(request.path, outcome.status, outcome.body, outcome.ms))
        return json_response(outcome.status, outcome.body)

    def _viewer_address(self, request: Request) -> str:
        if self.options.trust_viewer_address:
            given = request.headers.get("cloudfront-viewer-address")
            if given:
                return given
        return socket_address(*request.peer)

    # -- delegation --------------------------------------------------------------------
    def _site(self, path: str) -> Response:
        from . import site

        answer = site.handle_get(path, self.site_dir, self.permalinks)
        if answer is None:
            return json_response(404, {"error": "not found"})
        status, content_type, payload = answer
        return Response(status, content_type, payload)

    def _admin(self, request: Request) -> Response:
        if request.peer[0] not in LOOPBACK:
            raise EdgeRefusal(403, "the admin API answers loopback callers only")
        if len(request.body) > ADMIN_BODY_MAX_BYTES:
            raise EdgeRefusal(400, "admin request body is too large")
        if request.path.rstrip("/") == RELEASE_PATH and request.method == "POST":
            released = self.rate_rule.forget(address_key(socket_address(*request.peer)))
            return json_response(200, {"released": released})
        from . import admin

        body = _admin_body(request.body)
        status, payload = admin.handle(request.method, request.path, body, self.runtime)
        return json_response(status, payload)


def message_line(path: str, status: int, body: Mapping[str, Any], ms: float) -> str:
    """``/chat 200 answered 412 ms, 2 sources``: what happened, never who asked or what."""
    if status == 200:
        word = next((k for k in ("off", "limited", "degraded") if body.get(k)), "answered")
    else:
        word = str(body.get("error", ""))[:80] or "refused"
    sources = len(body.get("sources") or ())
    tail = f", {sources} source{'s' * (sources != 1)}" if sources else ""
    return f"{path} {status} {word} {ms:.0f} ms{tail}"


def refused_origin_line(origin: str | None) -> str:
    """The `serve` log line of a preflight from a page whose origin is not allowed."""
    return (
        f"OPTIONS /chat refused a page on {origin}: not an allowed site origin (the widget "
        f"there cannot reach /chat); allow it with `--site-origin {origin}`"
    )


def origins_line(origins: tuple[str, ...]) -> str:
    """What `serve` says at start-up about pages on other origins."""
    if not origins:
        return (
            "cross-origin: none allowed (pages on this server only); embed the widget "
            "elsewhere with --site-origin ORIGIN, e.g. --site-origin http://127.0.0.1:8000"
        )
    return f"cross-origin: /chat answers pages on {', '.join(origins)}"


def openapi_document() -> bytes:
    from importlib import resources

    return (resources.files("steps.lib.request") / "openapi.json").read_bytes()


def refusal_405(message: str, path: str) -> Response:
    return json_response(405, {"error": message}, ("Allow", allowed_methods(path)))


def allowed_methods(path: str) -> str:
    """The methods a path answers (the Allow header of a 405, as RFC 9110 requires)."""
    if path in CHAT_PATHS:
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
