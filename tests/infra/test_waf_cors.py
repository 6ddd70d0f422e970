"""The web ACL as synthesized, evaluated by the offline WAF model (tests/infra/waf_model.py):
every edge refusal is readable by a listed cross-origin page, and only POSTs use up the
rate allowance. Each guarantee is shown failing on the naive rules the stack had before."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from steps.lib.request.edge_blocks import RATE_BLOCKED, SIZE_BLOCKED

from .conftest import SITE_ORIGINS
from .waf_model import Request, WebAclModel

pytestmark = pytest.mark.infra

UNLISTED = "https://evil.example.net"
MESSAGE = json.dumps({"message": "How does the rate rule count?"}).encode()


@pytest.fixture
def acl(synth) -> dict[str, Any]:
    (web_acl,) = synth.resources("AWS::WAFv2::WebACL", stack="edge").values()
    return copy.deepcopy(web_acl["Properties"])


@pytest.fixture
def limit(synth) -> int:
    return int(synth.context["chatguard/edge"]["waf_rate_limit"])


def post(origin: str | None, body: bytes = MESSAGE) -> Request:
    headers = {"Content-Type": "application/json"} | ({"Origin": origin} if origin else {})
    return Request("POST", "/chat", headers, body)


def preflight(origin: str) -> Request:
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST"}
    return Request("OPTIONS", "/chat", headers)


def too_large(synth) -> bytes:
    return b"x" * (synth.context["chatguard"]["body_max_bytes"] + 1)


def over_the_rate(model: WebAclModel, origin: str | None, limit: int):
    for _ in range(limit):
        assert not model.evaluate(post(origin)).blocked
    return model.evaluate(post(origin))


@pytest.mark.parametrize("origin", SITE_ORIGINS)
def test_a_rate_block_names_the_listed_origin_it_answers(acl, limit, origin) -> None:
    answer = over_the_rate(WebAclModel(acl), origin, limit)
    assert (answer.status, answer.body) == (403, RATE_BLOCKED)
    assert answer.headers == {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}


@pytest.mark.parametrize("origin", SITE_ORIGINS)
def test_a_size_block_names_the_listed_origin_it_answers(synth, acl, origin) -> None:
    answer = WebAclModel(acl).evaluate(post(origin, too_large(synth)))
    assert (answer.status, answer.body) == (403, SIZE_BLOCKED)
    assert answer.headers == {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}


@pytest.mark.parametrize("origin", [None, UNLISTED, SITE_ORIGINS[0].upper()])
def test_other_origins_get_the_json_block_without_an_allow_origin(synth, acl, limit, origin):
    size = WebAclModel(acl).evaluate(post(origin, too_large(synth)))
    rate = over_the_rate(WebAclModel(acl), origin, limit)
    for answer, body in ((size, SIZE_BLOCKED), (rate, RATE_BLOCKED)):
        assert (answer.status, answer.body) == (403, body)
        assert answer.headers == {"Vary": "Origin"}  # the same as CloudFront's CORS policy


def test_a_body_too_large_and_over_the_rate_gets_the_size_notice(synth, acl, limit) -> None:
    model = WebAclModel(acl)
    over_the_rate(model, SITE_ORIGINS[0], limit)
    answer = model.evaluate(post(SITE_ORIGINS[0], too_large(synth)))
    assert answer.body == SIZE_BLOCKED  # "start a new conversation": resending would block again
    assert answer.headers["Access-Control-Allow-Origin"] == SITE_ORIGINS[0]


def test_preflights_do_not_use_up_a_cross_origin_visitors_allowance(acl, limit) -> None:
    model = WebAclModel(acl)
    origin = SITE_ORIGINS[1]
    for _ in range(limit):  # what a browser sends for each cross-origin message
        assert not model.evaluate(preflight(origin)).blocked
        assert not model.evaluate(post(origin)).blocked
    assert model.evaluate(post(origin)).body == RATE_BLOCKED
    assert not model.evaluate(preflight(origin)).blocked  # the rate rule never blocks OPTIONS


def test_page_and_widget_loads_are_never_counted_or_blocked(acl, limit) -> None:
    model = WebAclModel(acl)
    for _ in range(limit * 3):
        assert not model.evaluate(Request("GET", "/widget/chatguard.js")).blocked
    assert not over_the_rate(model, None, limit - 1).blocked


def test_naive_rules_fail_on_the_same_model(acl, limit) -> None:
    # Before: the rate rule blocked itself (no per-origin answers), counting every method.
    naive = copy.deepcopy(acl)
    rate = next(r for r in naive["Rules"] if r["Name"] == "ChatRateLimit")
    rate["Action"] = next(r for r in naive["Rules"] if r["Name"] == "ChatRateBlocked")["Action"]
    path_only = rate["Statement"]["RateBasedStatement"]["ScopeDownStatement"]["AndStatement"]
    rate["Statement"]["RateBasedStatement"]["ScopeDownStatement"] = path_only["Statements"][0]
    for rule in naive["Rules"]:
        rule.get("Action", {}).get("Block", {}).get("CustomResponse", {}).pop(
            "ResponseHeaders", None
        )
    answer = over_the_rate(WebAclModel(naive), SITE_ORIGINS[0], limit)
    assert answer.body == RATE_BLOCKED and "Access-Control-Allow-Origin" not in answer.headers
    model = WebAclModel(naive)
    blocked_after = next(
        n
        for n in range(1, limit + 1)
        if model.evaluate(preflight(SITE_ORIGINS[0])).blocked
        or model.evaluate(post(SITE_ORIGINS[0])).blocked
    )
    assert blocked_after <= limit // 2 + 1  # preflights ate half the allowance


def test_every_label_is_matched_only_after_the_rule_that_adds_it(acl) -> None:
    added: set[str] = set()
    matched_before_added = []
    for rule in sorted(acl["Rules"], key=lambda r: r["Priority"]):
        for key in _label_keys(rule["Statement"]):
            if key not in added:
                matched_before_added.append((rule["Name"], key))
        added |= {label["Name"] for label in rule.get("RuleLabels", [])}
    assert not matched_before_added
    assert added == {"chatguard:rate-limited", "chatguard:body-too-large"}


def test_two_rules_per_listed_origin_and_four_fixed(acl) -> None:
    own = [r for r in acl["Rules"] if "ManagedRuleGroupStatement" not in r["Statement"]]
    assert len(own) == 4 + 2 * len(SITE_ORIGINS)  # the README's idle cost counts these
    assert len({r["Priority"] for r in acl["Rules"]}) == len(acl["Rules"])


def _label_keys(statement: dict[str, Any]) -> list[str]:
    ((kind, spec),) = statement.items()
    if kind == "LabelMatchStatement":
        return [spec["Key"]]
    if kind == "AndStatement":
        return [k for s in spec["Statements"] for k in _label_keys(s)]
    return []
