"""Fixtures of the browser tests: Debian's Chromium through Playwright, and `chatguard serve`.

The browser is the system Chromium (a Playwright browser download cannot work here). Where
it is missing the tests skip locally but FAIL in CI (CI=true): CI installs it, so a skip
there would hide a broken set-up.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from .server import ServerProcess

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# A visitor limit and ceilings small enough to trip in a test. The edge rate rule is set
# high: every test browser connects from 127.0.0.1, and the rule is not what is tested here.
CHAT_FLAGS = ("--visitor-message-limit", "3", "--rate-limit", "1000")
# The worst-case reserve of one message is far above a tenth of a cent: every message trips.
TIGHT_FLAGS = ("--visitor-message-limit", "50", "--rate-limit", "1000",
               "--daily-ceiling-usd", "0.001")  # fmt: skip

_visitors = count(10)


def chromium_path() -> str:
    path = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if path:
        return path
    message = "Debian's chromium is not installed (make browser, or apt-get install chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def chat_server() -> Iterator[str]:
    with ServerProcess(CHAT_FLAGS) as server:
        yield server.url


@pytest.fixture(scope="session")
def tight_server() -> Iterator[str]:
    with ServerProcess(TIGHT_FLAGS) as server:
        yield server.url


def visitor_address() -> str:
    """A fresh documentation-range viewer address: a new visitor with a fresh quota."""
    return f"203.0.113.{next(_visitors)}:443"


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """One visitor: its own session storage and its own CloudFront-Viewer-Address."""
    ctx = browser.new_context(
        viewport={"width": 1100, "height": 760},
        extra_http_headers={"CloudFront-Viewer-Address": visitor_address()},
    )
    yield ctx
    ctx.close()


@pytest.fixture
def browser_context_without_csp(browser: Browser) -> Iterator[BrowserContext]:
    """The demo page's CSP would stop an inline handler even if the widget let one through;
    with it bypassed, only the widget's text-only rendering stands between a reply and script."""
    ctx = browser.new_context(
        bypass_csp=True, extra_http_headers={"CloudFront-Viewer-Address": visitor_address()}
    )
    yield ctx
    ctx.close()


@pytest.fixture
def browser_context_360(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(
        viewport={"width": 360, "height": 740},
        extra_http_headers={"CloudFront-Viewer-Address": visitor_address()},
    )
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    assert not errors, f"uncaught errors in the page: {errors}"


def screenshot(page: Page, name: str) -> Path:
    """Save the page once the widget's conversation has stopped (smooth) scrolling."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    read = "() => document.querySelector('chatguard-chat')?.shadowRoot?.querySelector('.log')" \
        "?.scrollTop ?? 0"  # fmt: skip
    last = None
    for _ in range(30):
        now = page.evaluate(read)
        if now == last:
            break
        last = now
        page.wait_for_timeout(100)
    path = OUTPUT / f"{name}.png"
    page.screenshot(path=str(path))
    return path
