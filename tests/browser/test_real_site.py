"""`chatguard serve --site DIR` on a real built site (Doxygen's output for LMDB,
tests/data/real_pages/doxygen): the visitor sees the site itself, its own stylesheet
applied, with the widget on it; a source link lands on the section's own anchor."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from playwright.sync_api import BrowserContext, expect

from indexer.build import build
from indexer.policy import IndexPolicy
from steps.lib.providers.hashing_embedder import HashingEmbedder

from .conftest import CHAT_FLAGS
from .server import ServerProcess
from .widget import Widget

pytestmark = pytest.mark.browser

DOXYGEN = Path(__file__).resolve().parents[1] / "data" / "real_pages" / "doxygen"
# The site's own stylesheet (the pages link doxygen.css): one rule the test can see.
SITE_CSS = "div.contents { border-left: 7px solid rgb(1, 2, 3); }\n"


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("real-site")
    site = work / "lmdb"
    shutil.copytree(DOXYGEN, site)
    (site / "doxygen.css").write_text(SITE_CSS)
    out = work / "knowledge"
    build(site, out, IndexPolicy((), ()), HashingEmbedder())
    with (
        mock.patch.dict(os.environ, {"CHATGUARD_EMBEDDER": "hashing"}),
        ServerProcess((*CHAT_FLAGS, "--site", str(site), "--knowledge", str(out))) as server,
    ):
        yield server.url


def test_the_real_site_is_served_with_its_own_style_and_the_widget(
    context: BrowserContext, real_site: str
) -> None:
    # Not the `page` fixture, which fails on any script error: the pages' own scripts need
    # jquery.js and search.js, which the vendored sample leaves out.
    page = context.new_page()
    page.goto(real_site + "/starting.html")
    expect(page).to_have_title("LMDB: Getting Started")
    contents = page.locator("div.contents")
    border = contents.evaluate("e => getComputedStyle(e).borderLeftColor")
    assert border == "rgb(1, 2, 3)"  # the site's own CSS, served as it is
    reply = Widget(page).open().ask("How do I open a cursor with mdb_cursor_open?")
    links = reply.get_by_role("list", name="Sources").get_by_role("link")
    expect(links.first).to_be_visible()
    hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
    target = next(href for href in hrefs if "#" in href)
    reply.locator(f'a[href="{target}"]').first.click()
    page.wait_for_url("**" + target)
    anchor = target.split("#", 1)[1]
    assert page.evaluate("a => document.getElementById(a) !== null", anchor), target
