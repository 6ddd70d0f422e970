"""A page object for <chatguard-chat>: Playwright locators pierce its open shadow root."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Locator, Page, expect

REPLY_TIMEOUT_MS = 30_000


class Widget:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.host = page.locator("chatguard-chat")
        self.launcher = self.host.get_by_role("button", name="Chat with this site")
        self.panel = self.host.get_by_role("dialog", name="Ask this site")
        self.input = self.host.get_by_role("textbox", name="Your message")
        self.send_button = self.host.get_by_role("button", name="Send")
        self.close_button = self.host.get_by_role("button", name="Close chat")
        self.log = self.host.get_by_role("log", name="Conversation")
        self.replies = self.host.locator(".msg.assistant")
        self.questions = self.host.locator(".msg.user")
        self.counter = self.host.locator(".count")

    def open(self) -> Widget:
        expect(self.launcher).to_be_visible()
        self.launcher.click()
        expect(self.panel).to_be_visible()
        return self

    def ask(self, text: str) -> Locator:
        """Send `text` with Enter and return the reply that answers it."""
        before = self.replies.count()
        self.input.fill(text)
        self.input.press("Enter")
        expect(self.replies).to_have_count(before + 1, timeout=REPLY_TIMEOUT_MS)
        return self.replies.nth(before)

    def ask_and_capture(self, text: str) -> tuple[Locator, dict[str, Any]]:
        """Like `ask`, also returning the JSON body the widget posted."""
        with self.page.expect_request(lambda r: r.method == "POST") as caught:
            reply = self.ask(text)
        return reply, json.loads(caught.value.post_data or "null")

    def active_element(self) -> str:
        """What has focus, as `tag.class` inside the widget or `page:tag` outside it."""
        return str(
            self.page.evaluate(
                """() => {
                const host = document.querySelector('chatguard-chat');
                const outside = document.activeElement;
                if (outside !== host) return 'page:' + outside.tagName.toLowerCase();
                const el = host.shadowRoot.activeElement;
                return el ? el.tagName.toLowerCase() + '.' + el.className : 'host';
            }"""
            )
        )
