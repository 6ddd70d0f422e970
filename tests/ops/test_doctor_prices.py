"""doctor's price check on stubbed Price Lists: AWS charging the catalogue's price (or
less) passes, charging more fails, and a list it cannot read cannot test. Item shapes
follow the Price List's (product attributes, OnDemand terms, price dimensions)."""

from __future__ import annotations

import json
from decimal import Decimal

from botocore.stub import Stubber

from ops.doctor import prices as doctor_prices
from steps.lib.runtime.settings import Settings

from . import doctor_accounts as acct

GLOBAL = Settings(model_id=acct.MODEL)  # global.anthropic.claude-haiku-4-5-...: $1 / $5
REGIONAL = Settings(model_id=acct.MODEL.replace("global.", "eu."))  # $1.10 / $5.50
FILTERS = [
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": acct.REGION},
    {"Type": "TERM_MATCH", "Field": "model", "Value": "Claude Haiku 4.5"},
]


def item(kind: str, per_1k: str, usagetype: str, unit: str = "1K tokens") -> str:
    return json.dumps(
        {
            "product": {
                "sku": f"SKU-{usagetype}",
                "attributes": {
                    "model": "Claude Haiku 4.5",
                    "regionCode": acct.REGION,
                    "inferenceType": kind,
                    "usagetype": usagetype,
                    "feature": "On-demand Inference",
                },
            },
            "terms": {
                "OnDemand": {
                    "T1": {
                        "priceDimensions": {
                            "D1": {
                                "unit": unit,
                                "description": f"{kind} for Claude Haiku 4.5",
                                "pricePerUnit": {"USD": per_1k},
                            }
                        }
                    }
                }
            },
        }
    )


def full_list(input_global: str = "0.001") -> list[str]:
    """Global and regional, input and output, plus cache and batch items to leave out."""
    return [
        item("Input tokens", input_global, "EU-Haiku4.5-input-tokens-global"),
        item("Output tokens", "0.005", "EU-Haiku4.5-output-tokens-global"),
        item("Input tokens", "0.0011", "EU-Haiku4.5-input-tokens-cross-region"),
        item("Output tokens", "0.0055", "EU-Haiku4.5-output-tokens-cross-region"),
        item("Input tokens", "0.0011", "EU-Haiku4.5-input-tokens"),
        item("Output tokens", "0.0055", "EU-Haiku4.5-output-tokens"),
        item("Cache read input tokens", "0.0001", "EU-Haiku4.5-cache-read-global"),
        item("Input tokens", "0.0005", "EU-Haiku4.5-batch-input-tokens-global"),
    ]


def check(settings: Settings, *pages: list[str]):
    pricing = acct.client("pricing", "us-east-1")
    with Stubber(pricing) as stub:
        for i, page in enumerate(pages):
            expected = {"ServiceCode": "AmazonBedrock", "Filters": FILTERS}
            expected |= {"NextToken": f"t{i}"} if i else {}
            answer = {"PriceList": page, "FormatVersion": "aws_v1"}
            answer |= {"NextToken": f"t{i + 1}"} if i + 1 < len(pages) else {}
            stub.add_response("get_products", answer, expected)
        result = doctor_prices.charges_no_more(pricing, settings, acct.REGION)
        stub.assert_no_pending_responses()
    return result


def test_the_catalogues_prices_pass_for_the_global_profile() -> None:
    result = check(GLOBAL, full_list())
    assert result.outcome == "PASS", result
    assert "input 1.000 (catalogue 1.00)" in result.detail


def test_the_regional_profile_is_compared_with_its_own_price() -> None:
    assert check(REGIONAL, full_list()[:3], full_list()[3:]).outcome == "PASS"


def test_aws_charging_more_fails() -> None:
    result = check(GLOBAL, full_list(input_global="0.00125"))
    assert result.outcome == "FAIL"
    assert "input 1.25000 > catalogue 1.00" in result.detail


def test_a_model_missing_from_the_price_list_cannot_test() -> None:
    result = check(GLOBAL, [])
    assert result.outcome == "CANNOT TEST" and "no on-demand token price" in result.detail


def test_prices_it_cannot_tie_to_the_profile_cannot_test() -> None:
    untied = [
        item("Input tokens", "0.001", "Haiku-in-a"),
        item("Input tokens", "0.0011", "Haiku-in-b"),
        item("Output tokens", "0.005", "Haiku-out"),
    ]
    result = check(GLOBAL, untied)
    assert result.outcome == "CANNOT TEST" and "none tied to the global route" in result.detail


def test_prices_per_million_tokens_are_read_too() -> None:
    listed = [
        item("Input tokens", "1.00", "global-in", unit="1M tokens"),
        item("Output tokens", "5.00", "global-out", unit="1M tokens"),
    ]
    assert check(GLOBAL, listed).outcome == "PASS"


def test_a_model_outside_the_catalogue_is_not_applicable() -> None:
    terms = {"price_input_per_mtok": Decimal("1"), "price_output_per_mtok": Decimal("2")}
    other = Settings(
        model_id="mistral.mistral-large-2407-v1:0",
        **terms,
        price_cache_write_per_mtok=Decimal("1"),
        price_cache_read_per_mtok=Decimal("1"),
        model_metering="bytes",
    )
    pricing = acct.client("pricing", "us-east-1")
    assert doctor_prices.charges_no_more(pricing, other, acct.REGION).outcome == "NOT APPLICABLE"
