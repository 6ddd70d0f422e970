"""A page on an origin `serve` does not allow is easy to find (issue 27, items 7 and 12):
`serve` says at start-up which origins it allows, a refused preflight leaves a line in its
log naming the flag that allows it, and an origin copied from an address bar
(`https://www.example.com/`, any case) is taken as the browser sends it."""

from __future__ import annotations

import signal
import urllib.request
from pathlib import Path

import pytest

from infra import config as deploy_config
from local.server.cors import OriginError, check_origins
from local.server.routes import origins_line, refused_origin_line

from .conftest import serve_process

LISTED = "https://www.example.com"
UNLISTED = "http://127.0.0.1:8000"


def _preflight(url: str, origin: str) -> int:
    ask = urllib.request.Request(
        url + "/chat", method="OPTIONS",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
    )  # fmt: skip
    with urllib.request.urlopen(ask, timeout=60) as answer:
        return int(answer.status)


@pytest.mark.slow
def test_serve_names_its_origins_and_logs_the_preflight_it_refuses(knowledge_dir: Path) -> None:
    with serve_process(
        "--knowledge", str(knowledge_dir), "--site-origin", "HTTPS://www.Example.com/"
    ) as (process, url):
        assert _preflight(url, UNLISTED) == 204  # answered, without Allow-Origin
        assert _preflight(url, LISTED) == 204
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    lines = err.splitlines()
    assert origins_line((LISTED,)) in lines, err
    refused = [line for line in lines if "refused a page on" in line]
    assert len(refused) == 1 and refused[0].endswith(refused_origin_line(UNLISTED)), err
    assert f"`--site-origin {UNLISTED}`" in refused[0]


def test_with_no_origin_allowed_the_start_up_line_names_the_flag() -> None:
    assert "--site-origin" in origins_line(()) and "none allowed" in origins_line(())


@pytest.mark.parametrize(
    "copied", ["https://www.example.com/", "HTTPS://WWW.EXAMPLE.COM", " https://www.example.com "]
)
def test_an_origin_copied_from_an_address_bar_is_normalised(copied: str) -> None:
    assert check_origins([copied]) == (LISTED,)
    assert check_origins([copied, LISTED]) == (LISTED,)  # one entry, not two


def test_a_path_or_a_wildcard_is_still_refused() -> None:
    for bad in ("https://www.example.com/blog", "https://*.example.com", "null", "*"):
        with pytest.raises(OriginError):
            check_origins([bad])


def test_a_deployment_refuses_an_http_origin_and_names_the_https_one() -> None:
    from steps.lib.runtime.settings import cdk_context

    ctx = dict(cdk_context())
    ctx["chatguard/edge"] = {**ctx["chatguard/edge"], "site_origins": ["http://www.example.com"]}
    with pytest.raises(deploy_config.ConfigError) as refused:
        deploy_config.load(ctx)
    assert "https://www.example.com" in str(refused.value) and "\n" not in str(refused.value)
    ctx["chatguard/edge"]["site_origins"] = ["https://www.example.com/"]
    assert deploy_config.load(ctx).edge.site_origins == (LISTED,)
    assert check_origins([UNLISTED]) == (UNLISTED,)  # the local server still takes http://
