"""A WAF block read by the widget on a listed cross-origin site, in Chromium.

The web ACL is synthesized by the edge stack's own construct, with the test site's origin
listed; the offline WAF model (tests/infra/waf_model.py, a stand-in, not WAF) says what it
answers, and a small local edge serves exactly that: status, the rule's custom response
headers and body. Preflights are answered as CloudFront's CORS policy answers them (the
request contract's values, local/server/cors.py). The same page against the rules without
custom response headers (what the stack had before) shows that the browser then hides the
403 and the widget can only say it could not reach the chat.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from local.server.cors import decide
from tests.infra.waf_model import Request, WebAclModel

from .test_cross_origin import SiteServer
from .widget import Widget

pytestmark = pytest.mark.browser

WIDGET = Path(__file__).resolve().parents[2] / "widget"
RATE_LIMIT = 10  # WAF's floor
SIZE_LIMIT = 64  # far under what the widget sends, so its first message is "too large"


def synthesized_acl(origin: str, body_max_bytes: int) -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from infra.blocks.edge_firewall import EdgeFirewall
    from infra.config import EdgeConfig

    edge = EdgeConfig(
        waf_rate_limit=RATE_LIMIT, waf_window_seconds=120, waf_managed_rules=False,
        waf_blocked_alarm_threshold=10, api_throttle_rate=5, api_throttle_burst=10,
        origin_timeout_seconds=30, site_origins=(origin,),
    )  # fmt: skip
    stack = cdk.Stack(cdk.App(), "Probe", env=cdk.Environment(region="us-east-1"))
    EdgeFirewall(stack, "Firewall", name="probe", edge=edge, body_max_bytes=body_max_bytes)
    (acl,) = Template.from_stack(stack).to_json()["Resources"].values()
    return dict(acl["Properties"])


def without_cors_headers(acl: dict[str, Any]) -> dict[str, Any]:
    naive = copy.deepcopy(acl)
    for rule in naive["Rules"]:
        rule.get("Action", {}).get("Block", {}).get("CustomResponse", {}).pop(
            "ResponseHeaders", None
        )
    return naive


class EdgeServer:
    """Serves the widget and plays the edge for /chat: the model's block, or a 503."""

    def __init__(self, allowed_origin: str) -> None:
        self.model: WebAclModel | None = None
        edge = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.removeprefix("/widget/")
                path = WIDGET / name
                if "/" in name or not path.is_file():
                    self._send(404, {}, b"")
                    return
                kind = "text/css" if name.endswith(".css") else "text/javascript"
                self._send(200, {"Content-Type": kind}, path.read_bytes())

            def do_OPTIONS(self) -> None:  # CloudFront's CORS policy answers the preflight
                cors = decide(self.headers.get("Origin"), "OPTIONS", (allowed_origin,))
                self._send(204, cors.headers, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                assert edge.model is not None
                answer = edge.model.evaluate(
                    Request("POST", self.path, dict(self.headers.items()), body)
                )
                assert answer.blocked, "this edge only plays blocks"
                payload = json.dumps(answer.body).encode()
                self._send(
                    answer.status, {**answer.headers, "Content-Type": "application/json"}, payload
                )

            def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def site_and_edge() -> Iterator[tuple[SiteServer, EdgeServer]]:
    site = SiteServer()
    edge = EdgeServer(site.origin)
    site.chat_url = edge.url
    try:
        yield site, edge
    finally:
        edge.close()
        site.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context()
    yield ctx
    ctx.close()


def over_the_rate(acl: dict[str, Any], origin: str) -> WebAclModel:
    """A model whose rate rule has already counted this address's allowance."""
    model = WebAclModel(acl)
    for _ in range(RATE_LIMIT):
        request = Request("POST", "/chat", {"Origin": origin}, b"{}")
        assert not model.evaluate(request).blocked
    return model


def ask_once(context: BrowserContext, site: SiteServer) -> Any:
    page = context.new_page()
    page.goto(site.origin + "/")
    return Widget(page).open().ask("How does a rate-based rule count requests?")


def test_a_listed_site_shows_the_rate_notice(context, site_and_edge) -> None:
    site, edge = site_and_edge
    edge.model = over_the_rate(synthesized_acl(site.origin, 16384), site.origin)
    expect(ask_once(context, site)).to_have_class("msg assistant blocked-rate")


def test_a_listed_site_shows_the_size_notice(context, site_and_edge) -> None:
    site, edge = site_and_edge
    edge.model = WebAclModel(synthesized_acl(site.origin, SIZE_LIMIT))
    expect(ask_once(context, site)).to_have_class("msg assistant blocked-size")


def test_without_cors_headers_on_the_block_the_widget_cannot_read_it(context, site_and_edge):
    site, edge = site_and_edge
    naive = without_cors_headers(synthesized_acl(site.origin, 16384))
    edge.model = over_the_rate(naive, site.origin)
    expect(ask_once(context, site)).to_have_class("msg assistant network")
