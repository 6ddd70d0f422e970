"""The widget's source links on both permalink settings, end to end: `chatguard serve` on
an index built with the setting serves the sample site at that index's links, and a
source link the widget shows lands on the cited section of a served page."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
from playwright.sync_api import Page, expect

from indexer.build import build
from indexer.policy import IndexPolicy
from steps.lib.providers.hashing_embedder import HashingEmbedder

from .conftest import CHAT_FLAGS
from .server import ServerProcess
from .widget import Widget

pytestmark = pytest.mark.browser

SAMPLE_SITE = Path(__file__).resolve().parents[2] / "examples" / "site"
QUESTION = "How does a rate-based rule count requests?"
# A source link: the page's path (with .html for "file", without for "pretty"), a section.
LINK = {
    "file": re.compile(r"/[a-z0-9/-]*\.html(#[a-z0-9-]+)?"),
    "pretty": re.compile(r"/[a-z0-9/-]*(?<!\.html)(#[a-z0-9-]+)?"),
}
PAGE = {"file": "/posts/waf-rate-limiting.html", "pretty": "/posts/waf-rate-limiting"}


@pytest.fixture(scope="module")
def pretty_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("pretty-knowledge")
    policy = replace(IndexPolicy.from_context(), permalinks="pretty")
    build(SAMPLE_SITE, out, policy, HashingEmbedder())
    # Built by the fast hashing stand-in, so the server embeds queries with it too.
    with (
        mock.patch.dict(os.environ, {"CHATGUARD_EMBEDDER": "hashing"}),
        ServerProcess((*CHAT_FLAGS, "--knowledge", str(out))) as server,
    ):
        yield server.url


@pytest.mark.parametrize("permalinks", ["file", "pretty"])
def test_a_source_link_lands_on_the_cited_section_with_either_setting(
    page: Page, request: pytest.FixtureRequest, permalinks: str
) -> None:
    server = request.getfixturevalue("chat_server" if permalinks == "file" else "pretty_server")
    page.goto(server + PAGE[permalinks])
    reply = Widget(page).open().ask(QUESTION)
    links = reply.get_by_role("list", name="Sources").get_by_role("link")
    expect(links.first).to_be_visible()
    hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
    assert all(LINK[permalinks].fullmatch(href) for href in hrefs), hrefs
    target = next(href for href in hrefs if "#" in href)
    reply.locator(f'a[href="{target}"]').first.click()
    page.wait_for_url("**" + target)
    expect(page.locator("#" + target.split("#", 1)[1])).to_have_count(1)
    expect(page.get_by_role("heading", level=1)).to_be_visible()
