"""Widget, contract and WAF agree in bytes: the history is trimmed to the body's byte
budget, and a WAF block (its JSON custom response) is a state of its own.

/chat is answered by Playwright (page.route) with long signed answers: the widget takes a
signature as given, so a history as heavy as the contract allows is built in a few turns.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from steps.lib.request.edge_blocks import RATE_BLOCKED, SIZE_BLOCKED, body_text
from steps.lib.runtime.settings import cdk_context

from .widget import Widget

pytestmark = pytest.mark.browser

BUDGET = cdk_context()["chatguard"]["body_max_bytes"]
# 2,000 UTF-16 units that weigh 5,000 bytes in a JSON body: 3 bytes per CJK character,
# 2 per escaped quote or backslash.
HEAVY = "引" * 1000 + '"\\' * 500


def answer_with(text: str) -> Any:
    def handler(route: Route) -> None:
        reply = {"reply": text, "sources": [], "sig": "s" * 43}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(reply))

    return handler


def blocked_by_waf(block: dict[str, str]) -> Any:
    def handler(route: Route) -> None:  # the web ACL's custom response, byte for byte
        route.fulfill(status=403, content_type="application/json", body=body_text(block))

    return handler


def json_bytes(body: dict[str, Any]) -> int:
    """JSON.stringify's output length in UTF-8 (no spaces, non-ASCII kept as is)."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def test_history_is_trimmed_to_the_byte_budget_oldest_exchange_first(
    page: Page, chat_server: str
) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    page.route("**/chat", answer_with(HEAVY[::-1]))
    for _ in range(3):
        widget.ask(HEAVY)
    _, posted = widget.ask_and_capture(HEAVY)

    full = [
        {"role": "user", "content": HEAVY},
        {"role": "assistant", "content": HEAVY[::-1], "sig": "s" * 43},
    ] * 3
    untrimmed = {"message": HEAVY, "history": full, "page": "/"}
    assert json_bytes(untrimmed) > BUDGET  # the naive widget: WAF would block this forever
    assert json_bytes(posted) <= BUDGET
    kept = posted["history"]
    assert 0 < len(kept) < len(full) and len(kept) % 2 == 0
    assert kept == full[-len(kept) :]  # the newest exchanges, whole
    assert json_bytes({**posted, "history": full[-len(kept) - 2 :]}) > BUDGET  # as many as fit

    # A deployment with a smaller body_max_bytes tells the widget so.
    widget.host.evaluate("el => el.setAttribute('body-max-bytes', '12000')")
    _, smaller = widget.ask_and_capture(HEAVY)
    assert json_bytes(smaller) <= 12000 < json_bytes(posted)


def test_a_waf_block_is_its_own_state_and_a_size_block_drops_the_history(
    page: Page, chat_server: str
) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    page.route("**/chat", answer_with("A short answer."))
    widget.ask("first question")
    page.unroute("**/chat")

    notices = {}
    for kind, block in (("blocked-size", SIZE_BLOCKED), ("blocked-rate", RATE_BLOCKED)):
        page.route("**/chat", blocked_by_waf(block))
        reply, posted = widget.ask_and_capture("second question")
        page.unroute("**/chat")
        expect(reply).to_have_class(f"msg assistant {kind}")
        expect(reply).not_to_contain_text(block["error"])  # the widget's words, not the edge's
        notices[kind] = reply.locator(".notice").inner_text()
        if kind == "blocked-size":
            assert len(posted["history"]) == 2  # the exchange that was blocked ...
    page.route("**/chat", answer_with("Another answer."))
    _, after = widget.ask_and_capture("third question")
    # ... is never resent: after the size block, the conversation sent starts afresh.
    assert after["history"] == []
    assert "too long" in notices["blocked-size"] and "wait" in notices["blocked-rate"]
    assert len(set(notices.values())) == 2
