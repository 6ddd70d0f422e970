"""Cross-origin embedding on AWS: cdk.json's site_origins reach CloudFront's CORS policy on
/chat (exact origins, no wildcard, no credentials), and OPTIONS /chat is a mock that starts
no execution. WAF, quota and cost gate are untouched by it."""

from __future__ import annotations

import pytest

from infra.blocks.site_distribution import _cors

from .conftest import SITE_ORIGINS

pytestmark = pytest.mark.infra


def _chat_cors(synth) -> dict:
    configs = [
        p["Properties"]["ResponseHeadersPolicyConfig"]
        for p in synth.resources("AWS::CloudFront::ResponseHeadersPolicy").values()
    ]
    with_cors = [c["CorsConfig"] for c in configs if "CorsConfig" in c]
    assert len(with_cors) == 1, "only the /chat behavior answers cross-origin"
    return with_cors[0]


def test_cloudfront_names_only_the_listed_origins_and_never_credentials(synth) -> None:
    cors = _chat_cors(synth)
    assert cors["AccessControlAllowOrigins"]["Items"] == list(SITE_ORIGINS)
    assert "*" not in cors["AccessControlAllowOrigins"]["Items"]
    assert cors["AccessControlAllowCredentials"] is False
    assert cors["AccessControlAllowMethods"]["Items"] == ["POST", "OPTIONS"]
    assert cors["AccessControlAllowHeaders"]["Items"] == ["Content-Type"]
    assert cors["OriginOverride"] is True
    (distribution,) = synth.resources("AWS::CloudFront::Distribution").values()
    (chat,) = distribution["Properties"]["DistributionConfig"]["CacheBehaviors"]
    policies = synth.resources("AWS::CloudFront::ResponseHeadersPolicy")
    chat_policy = policies[chat["ResponseHeadersPolicyId"]["Ref"]]
    assert "CorsConfig" in chat_policy["Properties"]["ResponseHeadersPolicyConfig"]


def test_the_preflight_is_a_mock_that_never_starts_the_workflow(synth) -> None:
    methods = [m["Properties"] for m in synth.resources("AWS::ApiGateway::Method").values()]
    assert sorted(m["HttpMethod"] for m in methods) == ["OPTIONS", "POST"]
    (options,) = [m for m in methods if m["HttpMethod"] == "OPTIONS"]
    assert options["Integration"]["Type"] == "MOCK"
    assert "Credentials" not in options["Integration"]  # it cannot call Step Functions
    assert options["Integration"]["IntegrationResponses"] == [{"StatusCode": "204"}]


def test_an_empty_list_keeps_the_chat_same_origin() -> None:
    assert _cors(()) is None
