"""The widget embedded on another site: a page served from a second local origin loads the
widget from `chatguard serve` and chats with it (the origin is in the allow-list); the same
page from a third, unlisted origin is refused by the browser itself (CORS), and its refused
preflight started nothing on the server."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from .server import ServerProcess
from .widget import Widget

pytestmark = pytest.mark.browser

QUESTION = "How does a rate-based rule count requests?"


class SiteServer:
    """A plain static site on its own loopback port: one page that embeds the widget."""

    def __init__(self) -> None:
        self.chat_url = ""
        site = self

        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                html = (
                    "<!doctype html><html lang=en><head><meta charset=utf-8><title>Blog</title>"
                    f'<script src="{site.chat_url}/widget/chatguard.js" defer></script>'
                    "</head><body><h1>Someone else's blog</h1>"
                    f'<chatguard-chat endpoint="{site.chat_url}/chat"></chatguard-chat>'
                    "</body></html>"
                ).encode()
                self.send_response(200 if self.path == "/" else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(html)))
                self.end_headers()
                self.wfile.write(html)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[SiteServer, SiteServer, str]]:
    listed, unlisted = SiteServer(), SiteServer()
    flags = ("--visitor-message-limit", "50", "--rate-limit", "1000",
             "--site-origin", listed.origin)  # fmt: skip
    try:
        with ServerProcess(flags) as chat:
            listed.chat_url = unlisted.chat_url = chat.url
            yield listed, unlisted, chat.url
    finally:
        listed.close()
        unlisted.close()


@pytest.fixture
def plain_context(browser: Browser) -> Iterator[BrowserContext]:
    """No extra request headers: a cross-origin request carries exactly what the widget sets."""
    ctx = browser.new_context()
    yield ctx
    ctx.close()


def _last_request(chat_url: str) -> str | None:
    with urllib.request.urlopen(chat_url + "/_admin/trace/last", timeout=30) as answer:
        return json.loads(answer.read()).get("request_id")


def _chat_directly(chat_url: str) -> None:
    body = json.dumps({"message": QUESTION}).encode()
    request = urllib.request.Request(
        chat_url + "/chat", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200


def test_a_listed_site_embeds_the_widget_and_chats(plain_context, sites) -> None:
    listed, _, chat_url = sites
    page: Page = plain_context.new_page()
    page.goto(listed.origin + "/")
    widget = Widget(page).open()
    with page.expect_response(lambda r: r.request.method == "POST") as caught:
        reply = widget.ask(QUESTION)
    expect(reply).to_have_class("msg assistant answer")
    response = caught.value
    assert response.url == chat_url + "/chat"
    assert response.request.all_headers()["origin"] == listed.origin
    headers = response.all_headers()
    assert headers["access-control-allow-origin"] == listed.origin
    assert "access-control-allow-credentials" not in headers


def test_an_unlisted_site_is_refused_by_the_browser_and_starts_nothing(
    plain_context, sites
) -> None:
    listed, unlisted, chat_url = sites
    _chat_directly(chat_url)  # so "the last request" exists whatever ran before
    before = _last_request(chat_url)
    assert before and listed.origin != unlisted.origin
    page: Page = plain_context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.goto(unlisted.origin + "/")
    widget = Widget(page).open()
    reply = widget.ask(QUESTION)
    expect(reply).to_have_class("msg assistant network")  # fetch rejected by the browser
    assert any("CORS" in line for line in console), console
    assert _last_request(chat_url) == before  # no execution: only the preflight was sent
