"""The widget against the real `chatguard serve` (offline pipeline on moto, real edge)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from ops.http import request

from .conftest import screenshot
from .widget import Widget

pytestmark = pytest.mark.browser

QUESTION = "How does a rate-based rule count requests?"
DEGRADED = "Reduced service: here is the closest section of this site"


def test_a_question_gets_an_answer_with_links_to_its_sources(page: Page, chat_server: str) -> None:
    page.goto(chat_server + "/posts/waf-rate-limiting.html")
    widget = Widget(page).open()
    reply, sent = widget.ask_and_capture(QUESTION)

    assert sent == {"message": QUESTION, "history": [], "page": "/posts/waf-rate-limiting.html"}
    expect(reply).to_have_class("msg assistant answer")
    expect(reply.locator(".text")).to_contain_text(re.compile(r"\w{3,}"))
    links = reply.get_by_role("list", name="Sources").get_by_role("link")
    expect(links.first).to_be_visible()
    hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
    # The sample index keeps each file's name (permalinks "file"): links a plain S3 or
    # CloudFront host serves, and the local server serves only at them.
    assert all(re.fullmatch(r"/[a-z0-9/-]*\.html(#[a-z0-9-]+)?", href) for href in hrefs), hrefs
    screenshot(page, "answer")

    # A section link lands on the cited section of a served page.
    target = next(href for href in hrefs if "#" in href)
    reply.locator(f'a[href="{target}"]').first.click()
    page.wait_for_url("**" + target)
    expect(page.locator("#" + target.split("#", 1)[1])).to_have_count(1)
    expect(page.get_by_role("heading", level=1)).to_be_visible()


def test_a_reload_keeps_the_conversation_and_sends_it_back_signed(
    page: Page, chat_server: str
) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    with page.expect_response("**/chat") as first:
        widget.ask(QUESTION)
    answer = first.value.json()
    assert answer["sig"]

    page.reload()
    expect(widget.panel).to_be_visible()
    expect(widget.questions).to_have_text(["You said: " + QUESTION])
    expect(widget.replies.locator(".text")).to_have_text([answer["reply"]])
    screenshot(page, "reloaded")

    reply, sent = widget.ask_and_capture("And how long is its window?")
    assert sent["history"] == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": answer["reply"], "sig": answer["sig"]},
    ]
    # The server verified the signed turn and answered: a forged one would not be accepted.
    expect(reply).to_have_class("msg assistant answer")


def test_the_visitor_limit_shows_the_limit_message(page: Page, chat_server: str) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    for n in range(3):  # the server runs with --visitor-message-limit 3
        expect(widget.ask(f"Question {n + 1} about passkeys")).to_have_class("msg assistant answer")
    limited = widget.ask("Question 4 about passkeys")
    expect(limited).to_have_class("msg assistant limited")
    expect(limited.locator(".notice")).to_have_text("Daily message limit reached")
    expect(limited.locator(".text")).to_contain_text(re.compile(r"\w{3,}"))
    expect(limited.locator("a")).to_have_count(0)
    screenshot(page, "limited")


def test_a_tripped_ceiling_shows_the_reduced_service_notice(page: Page, tight_server: str) -> None:
    url = tight_server + "/posts/content-security-policy.html"
    page.goto(url)
    widget = Widget(page).open()
    reply = widget.ask("What does a Content Security Policy block?")
    expect(reply).to_have_class("msg assistant degraded")
    expect(reply.locator(".notice")).to_have_text(DEGRADED)
    expect(reply.locator(".text")).not_to_contain_text(DEGRADED)  # said once, as the headline
    expect(reply.locator(".text")).to_contain_text(re.compile(r"\w{3,}"))
    expect(reply.get_by_role("link").first).to_have_attribute("href", re.compile(r"^/"))
    assert page.url == url, "the degraded answer came without leaving the page"
    screenshot(page, "degraded")


def test_markup_typed_by_a_visitor_stays_text_through_the_real_server(
    browser_context_without_csp: BrowserContext, chat_server: str
) -> None:
    page = browser_context_without_csp.new_page()
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    payload = '<img src=x onerror="window.__pwned = 1"> what is a CSP?'
    reply = widget.ask(payload)
    expect(reply).to_have_class("msg assistant answer")
    expect(widget.questions.first).to_have_text("You said: " + payload)
    assert widget.host.locator("img").count() == 0
    page.reload()
    expect(widget.questions.first).to_have_text("You said: " + payload)
    # No <img> after the reload either: no handler can run, whatever the machine's speed
    # (the wait below alone could end before a slow page fired one).
    assert widget.host.locator("img").count() == 0
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None


def test_a_keyboard_only_visitor_can_chat_and_close(page: Page, chat_server: str) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page)
    for _ in range(80):  # the page's links come first in the tab order, then the launcher
        page.keyboard.press("Tab")
        if widget.active_element() == "button.launcher":
            break
    else:
        pytest.fail("Tab never reached the chat launcher")

    page.keyboard.press("Enter")
    expect(widget.panel).to_be_visible()
    assert widget.active_element().startswith("textarea")
    page.keyboard.type("What is a WAF")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("rate rule?")
    expect(widget.input).to_have_value("What is a WAF\nrate rule?")
    page.keyboard.press("Tab")
    assert widget.active_element() == "button.send"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    expect(widget.replies).to_have_count(1, timeout=30_000)
    expect(widget.questions.first).to_have_text("You said: What is a WAF\nrate rule?")
    expect(widget.input).to_have_value("")

    page.keyboard.press("Shift+Tab")  # back from the input into the answer's source links
    assert widget.active_element().startswith("a")
    screenshot(page, "keyboard")
    page.keyboard.press("Escape")
    expect(widget.panel).to_be_hidden()
    assert widget.active_element() == "button.launcher"
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("Enter")
    expect(widget.panel).to_be_visible()
    expect(widget.replies).to_have_count(1)


def test_the_off_switch_says_the_chat_is_off_not_reduced_service(
    page: Page, chat_server: str
) -> None:
    """The operator's `off` through the real pipeline: its own state, not "Reduced service"
    over a reply that says the chat is off."""
    admin = chat_server + "/_admin/mode"
    assert request("POST", admin, payload={"mode": "off"}).status == 200
    try:
        page.goto(chat_server + "/")
        widget = Widget(page).open()
        reply = widget.ask("What does a Content Security Policy block?")
        expect(reply).to_have_class("msg assistant off")
        expect(reply.locator(".notice")).to_have_text("The chat is switched off for now")
        expect(reply).not_to_contain_text("Reduced service")
        expect(reply.locator(".text")).to_contain_text("on this site's pages")
        expect(reply.locator(".sources")).to_have_count(0)
        expect(widget.input).to_have_value("")  # a definite answer: nothing to retry
        screenshot(page, "off")
    finally:
        assert request("POST", admin, payload={"mode": "normal"}).status == 200
