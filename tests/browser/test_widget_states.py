"""The widget's own behaviour, with /chat answered by Playwright (page.route).

The page, the widget's JS and CSS come from the real `chatguard serve`; only the chat
replies are crafted here, to reach the states the real pipeline gives rarely or never on
demand (each HTTP error, a network failure, a timeout, a reply carrying markup).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, Route, expect

from .conftest import screenshot
from .widget import Widget

pytestmark = pytest.mark.browser

XSS = '<img src=x onerror="window.__pwned = 1">'


def fulfil(status: int, body: Any) -> Any:
    def handler(route: Route) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        route.fulfill(status=status, content_type="application/json", body=text)

    return handler


def naive_rendering_runs(page: Page, tag: str, markup: str) -> None:
    """What the widget must not do, on the same page: `markup` as a `tag`'s innerHTML runs
    (the XSS image's onerror sets window.__pwned = 1)."""
    page.evaluate(
        "([tag, t]) => { const e = document.createElement(tag); e.innerHTML = t;"
        " document.body.append(e); }",
        [tag, markup],
    )
    page.wait_for_function("window.__pwned === 1", timeout=5000)


REFUSALS = [
    ("http400", 400, {"error": "history[0].role is wrong"}, "could not be sent as written"),
    ("http403", 403, {"error": "origin rejected"}, "not accepting messages from your connection"),
    ("http429", 429, {"error": "stage throttled"}, "busy right now"),
    ("http503", 503, {"error": "fail closed: ssm down"}, "unavailable at the moment"),
    ("unexpected", 200, "<html>a proxy's error page</html>", "Something went wrong"),
]


def test_every_failure_has_its_own_friendly_message(page: Page, chat_server: str) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    notices: dict[str, str] = {}
    for state, status, body, expected in REFUSALS:
        page.route("**/chat", fulfil(status, body))
        reply = widget.ask("How do rate rules work?")
        page.unroute("**/chat")
        expect(reply).to_have_class(f"msg assistant {state}")
        expect(reply.locator(".notice")).to_contain_text(expected)
        # The server's error text is for developers: the visitor sees the friendly line only.
        expect(reply).not_to_contain_text(body["error"] if isinstance(body, dict) else "proxy")
        # The message comes back into the input, so trying again needs no retyping.
        expect(widget.input).to_have_value("How do rate rules work?")
        notices[state] = reply.locator(".notice").inner_text()
        screenshot(page, state)

    page.route("**/chat", lambda route: route.abort("connectionrefused"))
    network = widget.ask("first try")
    page.unroute("**/chat")
    expect(network).to_have_class("msg assistant network")
    notices["network"] = network.locator(".notice").inner_text()
    screenshot(page, "network")

    held: list[Route] = []
    page.route("**/chat", lambda route: held.append(route))  # never answered
    widget.host.evaluate("el => el.setAttribute('timeout', '0.5')")
    timeout = widget.ask("second try")
    expect(timeout).to_have_class("msg assistant timeout")
    expect(widget.send_button).to_be_enabled()
    notices["timeout"] = timeout.locator(".notice").inner_text()
    screenshot(page, "timeout")

    assert len(set(notices.values())) == len(notices) == 7, notices
    assert "took too long" in notices["timeout"] and "reach the chat" in notices["network"]


def test_sending_is_disabled_while_a_request_is_in_flight(page: Page, chat_server: str) -> None:
    held: list[Route] = []
    page.route("**/chat", lambda route: held.append(route))
    # The widget calls fetch inside the key and click handlers, which have run by the time
    # Playwright returns: counting the calls in the page needs no wait, where the routed
    # requests below reach Python only after a wait a loaded machine could outlast.
    page.add_init_script(
        "window.__fetches = 0; const sent = window.fetch; window.fetch = function (...args)"
        "{ window.__fetches += 1; return sent.apply(this, args); };"
    )
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    widget.input.fill("one")
    widget.input.press("Enter")
    expect(widget.send_button).to_be_disabled()
    expect(widget.host.get_by_role("status")).to_contain_text("Waiting for the answer")
    widget.input.fill("two")
    widget.input.press("Enter")
    widget.send_button.click(force=True)
    assert page.evaluate("window.__fetches") == 1, "a second request left while in flight"
    page.wait_for_timeout(200)
    assert len(held) == 1, "a second request left while the first was in flight"
    fulfil(200, {"reply": "answer one", "sources": [], "sig": "s1"})(held[0])
    expect(widget.replies).to_have_count(1)
    expect(widget.send_button).to_be_enabled()
    expect(widget.input).to_have_value("two")


def test_history_sent_back_is_bounded_and_carries_each_signature(
    page: Page, chat_server: str
) -> None:
    answers = iter(range(1, 100))

    def answer(route: Route) -> None:
        n = next(answers)
        fulfil(200, {"reply": f"answer {n}", "sources": [], "sig": f"sig-{n}"})(route)

    page.route("**/chat", answer)
    page.goto(chat_server + "/posts/waf-rate-limiting.html")
    widget = Widget(page).open()
    bodies = [widget.ask_and_capture(f"question {i}")[1] for i in range(1, 6)]

    assert bodies[0] == {
        "message": "question 1",
        "history": [],
        "page": "/posts/waf-rate-limiting.html",
    }
    last = bodies[-1]["history"]
    assert len(last) == 6, "history is the last three exchanges, six turns"
    assert last[0] == {"role": "user", "content": "question 2"}
    assert last[-1] == {"role": "assistant", "content": "answer 4", "sig": "sig-4"}
    assert all(t["sig"] == "sig-" + t["content"].split()[-1] for t in last[1::2])


def test_unsigned_replies_are_not_sent_back_as_history(page: Page, chat_server: str) -> None:
    replies = iter([
        {"reply": "closest section", "degraded": True, "sources": []},
        {"reply": "limit reached", "limited": True},
        {"reply": "signed", "sources": [], "sig": "good"},
        {"reply": "next", "sources": [], "sig": "next"},
    ])  # fmt: skip
    page.route("**/chat", lambda route: fulfil(200, next(replies))(route))
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    for text in ("a", "b", "c"):
        widget.ask(text)
    _, body = widget.ask_and_capture("d")
    assert body["history"] == [
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "signed", "sig": "good"},
    ]


def test_markup_in_a_reply_renders_as_text_and_runs_nothing(
    browser_context_without_csp: BrowserContext, chat_server: str
) -> None:
    page = browser_context_without_csp.new_page()
    crafted = {
        "reply": "Here you go " + XSS,
        "sources": [
            {"page": "javascript:window.__pwned=2", "heading": XSS},
            {"page": "/posts/waf", "heading": "Firewalls > Rate rules <b>bold</b>"},
        ],
        "sig": "x",
    }
    page.route("**/chat", fulfil(200, crafted))
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    reply = widget.ask(XSS)

    expect(reply.locator(".text")).to_have_text("Here you go " + XSS)
    expect(widget.questions.first).to_have_text("You said: " + XSS)
    assert widget.host.locator("img, b, script").count() == 0
    links = reply.locator("a")
    expect(links).to_have_count(2)  # the javascript: source is shown as plain text
    expect(links.first).to_have_attribute("href", "/posts/waf")
    expect(links.last).to_have_attribute("href", "/posts/waf#rate-rules-b-bold-b")
    expect(links.last).to_have_text("Rate rules <b>bold</b>")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    screenshot(page, "markup-as-text")

    # The same harness catches the naive rendering: innerHTML with the same reply runs it.
    naive_rendering_runs(page, "div", XSS)


def test_tampered_session_storage_still_renders_as_text(
    browser_context_without_csp: BrowserContext, chat_server: str
) -> None:
    page = browser_context_without_csp.new_page()
    page.goto(chat_server + "/")
    stored = {
        "open": True,
        "entries": [
            {"role": "user", "kind": "question", "content": XSS},
            {"role": "assistant", "kind": "answer", "content": XSS, "sig": "s",
             "sources": [{"page": "javascript:window.__pwned=3", "heading": "x"}]},
            {"role": "assistant", "kind": "x\" onmouseover=\"window.__pwned=4", "content": "k"},
            {"role": "system", "kind": "answer", "content": "dropped"},
            "not an entry",
        ],
    }  # fmt: skip
    page.evaluate("v => sessionStorage.setItem('chatguard:/chat', v)", json.dumps(stored))
    page.reload()
    widget = Widget(page)
    expect(widget.panel).to_be_visible()
    expect(widget.replies).to_have_count(2)
    expect(widget.host.locator(".msg")).to_have_count(3)
    assert widget.host.locator("img, a").count() == 0
    widget.replies.nth(1).hover()
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None


def test_input_is_bounded_to_the_contract_with_a_visible_counter(
    page: Page, chat_server: str
) -> None:
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    expect(widget.counter).to_have_text("0 / 2000")
    widget.input.press_sequentially("hello")
    expect(widget.counter).to_have_text("5 / 2000")
    widget.input.fill("x" * 2500)
    expect(widget.counter).to_have_text("2000 / 2000")
    assert len(widget.input.input_value()) == 2000


def test_the_panel_fits_a_360_pixel_screen(
    browser_context_360: BrowserContext, chat_server: str
) -> None:
    page = browser_context_360.new_page()
    page.route("**/chat", fulfil(200, {"reply": "A WAF " * 80, "sources": [
        {"page": "/posts/waf", "heading": "Web application firewalls > Rate-based rules"}],
        "sig": "s"}))  # fmt: skip
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    widget.ask("What is a WAF?")
    box = widget.panel.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= 360
    assert box["y"] >= 0 and box["y"] + box["height"] <= 740
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    send = widget.send_button.bounding_box()
    assert send is not None and send["x"] + send["width"] <= 360
    screenshot(page, "mobile-360")


def test_on_a_phone_a_source_link_is_not_covered_by_the_panel(
    browser_context_360: BrowserContext, chat_server: str
) -> None:
    page = browser_context_360.new_page()
    section = "Rate limiting with a WAF rate-based rule > Choosing the window and the limit"
    page.route("**/chat", fulfil(200, {"reply": "Pick it from real traffic.", "sources": [
        {"page": "/posts/waf-rate-limiting.html", "heading": section}], "sig": "s"}))  # fmt: skip
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    reply = widget.ask("How do I pick a rate limit?")
    reply.locator('a[href*="#"]').first.click()
    page.wait_for_url("**/posts/waf-rate-limiting.html#choosing-the-window-and-the-limit")
    target = page.locator("#choosing-the-window-and-the-limit")
    expect(target).to_be_in_viewport()
    expect(widget.panel).to_be_hidden()  # on the new page too: the closed state was kept
    expect(widget.launcher).to_be_visible()


def test_dark_scheme_and_reduced_motion_are_respected(browser: Any, chat_server: str) -> None:
    styles = {}
    for scheme, motion in (("light", "no-preference"), ("dark", "reduce")):
        ctx = browser.new_context(color_scheme=scheme, reduced_motion=motion)
        page = ctx.new_page()
        page.goto(chat_server + "/")
        widget = Widget(page).open()
        styles[scheme] = widget.panel.evaluate(
            "el => { const s = getComputedStyle(el); return [s.backgroundColor, s.animationName]; }"
        )
        if scheme == "dark":
            screenshot(page, "dark")
        ctx.close()
    assert styles["light"] == ["rgb(255, 255, 255)", "cg-rise"]
    background, animation = styles["dark"]
    assert background != "rgb(255, 255, 255)" and animation == "none"


def test_new_chat_forgets_the_conversation(page: Page, chat_server: str) -> None:
    page.route("**/chat", fulfil(200, {"reply": "an answer", "sources": [], "sig": "s"}))
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    widget.ask("remember me")
    widget.host.get_by_role("button", name="New chat").click()
    expect(widget.host.locator(".msg")).to_have_count(0)
    assert widget.active_element().startswith("textarea")
    page.reload()
    expect(widget.panel).to_be_visible()
    expect(widget.host.locator(".msg")).to_have_count(0)
    _, body = widget.ask_and_capture("fresh start")
    assert body["history"] == []


def test_the_endpoint_and_heading_come_from_attributes(page: Page, chat_server: str) -> None:
    page.route("**/api/ask", fulfil(200, {"reply": "from the other endpoint", "sources": [],
                                          "sig": "s"}))  # fmt: skip
    page.goto(chat_server + "/")
    page.evaluate(
        """() => {
        const el = document.createElement('chatguard-chat');
        el.setAttribute('endpoint', '/api/ask');
        el.setAttribute('heading', 'Ask Kestrel');
        el.setAttribute('label', 'Questions?');
        document.querySelector('chatguard-chat').replaceWith(el);
    }"""
    )
    host = page.locator("chatguard-chat")
    host.get_by_role("button", name="Questions?").click()
    expect(host.get_by_role("dialog", name="Ask Kestrel")).to_be_visible()
    with page.expect_request("**/api/ask") as sent:
        host.get_by_role("textbox", name="Your message").fill("where does this go?")
        host.get_by_role("button", name="Send").click()
    assert json.loads(sent.value.post_data or "{}")["message"] == "where does this go?"
    expect(host.locator(".msg.assistant .text")).to_have_text("from the other endpoint")


def test_a_paced_day_is_its_own_state_and_says_when_more_is_released(
    page: Page, chat_server: str
) -> None:
    # The body S7 returns on a day pacing holds back (steps/degraded.py), then a spent day.
    paced = {
        "reply": "Reduced service: here is the closest section of this site.\n\nToday's "
        "budget is released through the day; more is released at 17:52 UTC.\n\nRate rules.",
        "degraded": True,
        "sources": [{"page": "/posts/waf-rate-limiting", "heading": "Rate rules"}],
        "releasedAt": "2026-11-29T17:52Z",
    }
    spent = {**paced, "releasedAt": None, "reply": "Reduced service: here is the closest "
             "section of this site.\n\nRate rules."}  # fmt: skip
    replies = iter([paced, spent])
    page.route("**/chat", lambda route: fulfil(200, next(replies))(route))
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    reply = widget.ask("How do rate rules work?")
    expect(reply).to_have_class("msg assistant paced")
    expect(reply.locator(".notice")).to_have_text(
        "Today's budget is paced: more is released at 17:52 UTC"
    )
    expect(reply).to_contain_text("Rate rules.")
    assert reply.inner_text().count("17:52") == 1, "said once, in the notice"
    expect(widget.input).to_have_value("")  # served, not a failure to retry
    screenshot(page, "paced")
    other = widget.ask("And now?")
    expect(other).to_have_class("msg assistant degraded")  # no release time: plain degraded


def test_a_degraded_code_block_shows_as_code_and_its_markup_as_text(
    browser_context_without_csp: BrowserContext, chat_server: str
) -> None:
    """The body S7 returns for a section with a code block (steps/degraded.py, fenced by
    text/blocks.py) and two "also see" pages; the code holds markup that must not run."""
    page = browser_context_without_csp.new_page()
    code = f"<script>window.__pwned = 3</script>\n  {XSS}\n>>> r.json()"
    crafted = {
        "reply": "Reduced service: here is the closest section of this site.\n\n"
        f"Use the following code:\n\n```\n{code}\n```\n\nThat is all.",
        "degraded": True,
        "sources": [{"page": "/posts/waf-rate-limiting", "heading": "Rate rules"}],
        "also": [
            {"page": "/posts/ddos-basics", "title": "DDoS <b>basics</b>"},
            {"page": "javascript:window.__pwned=4", "title": "Trap"},
        ],
    }
    page.route("**/chat", fulfil(200, crafted))
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    reply = widget.ask("How do I read JSON?")

    block = reply.locator("pre.code > code")
    expect(block).to_have_count(1)
    assert block.text_content() == code  # every line and its indentation, as text
    assert block.evaluate("c => getComputedStyle(c.parentElement).whiteSpace") == "pre"
    expect(reply.locator("p.text")).to_have_text(["Use the following code:", "That is all."])
    assert widget.host.locator("img, b, script").count() == 0
    also = reply.locator(".also")
    expect(also).to_have_text("Also see: DDoS <b>basics</b>, Trap")
    expect(also.locator("a")).to_have_count(1)  # the javascript: page stays plain text
    expect(also.locator("a")).to_have_attribute("href", "/posts/ddos-basics")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    screenshot(page, "degraded-code-block")

    # The naive rendering on the same harness: the block as innerHTML runs its markup.
    naive_rendering_runs(page, "pre", code)


def test_source_links_carry_the_anchor_the_server_sends(page: Page, chat_server: str) -> None:
    """A section link goes to the page's own id for it (Doxygen's "Cursors", a Sphinx
    "jinja2.Environment"), to the page alone when the page has none (""), and to the
    section's slug only from a server that sends no anchor; an anchor is never markup."""
    sources = [
        {"page": "/starting.html", "heading": "LMDB > Cursors", "anchor": "Cursors"},
        {"page": "/api.html", "heading": "API > Environment", "anchor": "jinja2.Environment"},
        {"page": "/post.html", "heading": "Post > Welcome", "anchor": ""},
        {"page": "/old.html", "heading": "Old > Rate rules"},
        {"page": "/x.html", "heading": "X > Y", "anchor": '"><img src=x onerror=alert(1)>'},
    ]
    page.goto(chat_server + "/")
    widget = Widget(page).open()
    body = {"reply": "See these sections.", "sources": sources, "sig": ""}
    page.route("**/chat", fulfil(200, body))
    reply = widget.ask("Where is it?")
    links = reply.locator(".sources a")
    expect(links).to_have_count(10)  # a page link and a section link per source
    hrefs = [links.nth(i).get_attribute("href") for i in range(10)]
    assert hrefs[1::2] == [
        "/starting.html#Cursors",
        "/api.html#jinja2.Environment",
        "/post.html",
        "/old.html#rate-rules",
        "/x.html#%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
    ]
    assert reply.locator(".sources img").count() == 0
