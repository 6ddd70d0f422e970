"""The CORS decision for /chat: exact origins only, no wildcard, no credentials."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from local.server.cors import OriginError, check_origins, decide

SITE = "https://www.example.com"
ALLOWED = (SITE, "http://127.0.0.1:8080")


def test_a_listed_origin_gets_its_own_origin_back_and_nothing_more() -> None:
    post = decide(SITE, "POST", ALLOWED)
    assert post.headers == {"Vary": "Origin", "Access-Control-Allow-Origin": SITE}
    assert not post.preflight


def test_a_preflight_from_a_listed_origin_is_answered_without_credentials() -> None:
    answer = decide(SITE, "OPTIONS", ALLOWED)
    assert answer.preflight
    assert answer.headers["Access-Control-Allow-Origin"] == SITE
    assert answer.headers["Access-Control-Allow-Methods"] == "POST, OPTIONS"
    assert answer.headers["Access-Control-Allow-Headers"] == "Content-Type"
    assert "Access-Control-Allow-Credentials" not in answer.headers


@pytest.mark.parametrize(
    "origin",
    [None, "null", "https://evil.example", "https://www.example.com.evil.example",
     "HTTPS://WWW.EXAMPLE.COM", "https://www.example.com/", "http://www.example.com", "*"],
)  # fmt: skip
def test_any_other_origin_gets_no_allow_origin_even_on_a_preflight(origin) -> None:
    for method in ("POST", "OPTIONS"):
        answer = decide(origin, method, ALLOWED)
        assert "Access-Control-Allow-Origin" not in answer.headers
        # A browser's preflight is answered (never passed on); OPTIONS without an Origin is
        # no preflight at all.
        assert answer.preflight is (method == "OPTIONS" and origin is not None)


def test_an_empty_list_means_same_origin_only() -> None:
    assert decide(SITE, "POST", ()).headers == {}
    assert decide(SITE, "OPTIONS", ()).headers == {}


@given(origin=st.text(max_size=60), listed=st.lists(st.sampled_from(ALLOWED), max_size=2))
def test_allow_origin_is_never_a_wildcard_and_only_ever_the_listed_origin(origin, listed):
    for method in ("POST", "OPTIONS", "GET"):
        value = decide(origin, method, listed).headers.get("Access-Control-Allow-Origin")
        assert value is None or (value == origin and origin in listed)


def test_the_allow_list_takes_exact_origins_only() -> None:
    assert check_origins([SITE, "http://localhost:3000"]) == (SITE, "http://localhost:3000")
    for bad in ("*", "https://*.example.com", SITE + "/blog", "www.example.com",
                "null", "", 42, "https://exa mple.com"):  # fmt: skip
        with pytest.raises(OriginError):
            check_origins([bad])
