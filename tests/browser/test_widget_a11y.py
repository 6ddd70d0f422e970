"""Accessibility: axe-core (bundled by axe-playwright-python) over the demo page and widget.

axe walks open shadow roots, so the widget's labels, roles, names, contrast and focusable
scroll region are all checked, in the light and the dark colour scheme.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, expect

from .conftest import visitor_address
from .widget import Widget

pytestmark = pytest.mark.browser

RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa",
                                                 "wcag22aa", "best-practice"]}}  # fmt: skip


def violations(results: Any) -> list[str]:
    return [
        f"{v['id']}: {v['help']} ({', '.join(str(n['target']) for n in v['nodes'][:3])})"
        for v in results.response["violations"]
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_widget_passes_axe_with_a_conversation_open(
    browser: Browser, chat_server: str, scheme: Literal["light", "dark"]
) -> None:
    context = browser.new_context(
        color_scheme=scheme, extra_http_headers={"CloudFront-Viewer-Address": visitor_address()}
    )
    page = context.new_page()
    page.goto(chat_server + "/posts/waf-rate-limiting.html")
    widget = Widget(page)
    closed = Axe().run(page, options=RULES)
    widget.open()
    widget.ask("How does a rate-based rule count requests?")
    page.route("**/chat", lambda route: route.fulfill(status=503, json={"error": "down"}))
    widget.ask("And the window?")
    expect(widget.input).to_have_attribute("aria-describedby", "cg1-hint cg1-count")
    opened = Axe().run(page, options=RULES)
    context.close()
    assert violations(closed) == []
    assert violations(opened) == []
