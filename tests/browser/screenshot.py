"""Retake docs/img/widget.png, the README's picture of the widget, from the real demo.

    .venv/bin/python -m tests.browser.screenshot

Starts `chatguard serve` on a free loopback port, asks one question in Debian's Chromium
and saves the page with the answer open. Deterministic: the offline pipeline always gives
the same answer to the same question.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import sync_playwright

from .conftest import CHROMIUM, LAUNCH_ARGS
from .server import ServerProcess
from .widget import Widget

TARGET = Path(__file__).resolve().parents[2] / "docs" / "img" / "widget.png"
QUESTION = "How should I pick the window for a WAF rate rule?"


def main() -> None:
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    with ServerProcess(("--rate-limit", "1000")) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.goto(server.url + "/posts/waf-rate-limiting.html")
        widget = Widget(page).open()
        widget.ask(QUESTION)
        widget.input.blur()
        page.screenshot(path=str(TARGET))
        browser.close()
    print(f"wrote {TARGET.relative_to(TARGET.parents[2])}")


if __name__ == "__main__":
    main()
