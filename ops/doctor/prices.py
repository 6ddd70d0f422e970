"""`chatguard doctor`: does AWS charge more for the model than the catalogue says?

The reserve (S3) and the settlement (S6) price tokens from the model catalogue
(steps/lib/providers/catalogue.py), written from the pricing page. If AWS charges more in
the operator's Region, for the deployed model and inference profile, every reserve is too
small and the hard cap no longer holds; if AWS charges less, the reserve stays an upper
bound. This reads AWS's Price List (GetProducts on service code ``AmazonBedrock``,
https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html)
and compares the on-demand input and output prices, per million tokens.

What the Bedrock price list's attributes mean is not documented field by field; AWS's own
sample reads the ``model`` attribute (a display name), ``inferenceType`` (input or output
tokens, with cache items apart) and the dimension's unit ("1K tokens")
(https://github.com/aws-samples/sample-bedrock-model-evaluation, get_prices.py). So the
check is strict about what it cannot tell: no product, or several prices it cannot tie to
the deployed profile, is CANNOT TEST (with what it found), never a quiet PASS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from steps.lib.providers.model_ids import split_profile
from steps.lib.runtime.settings import Settings

from .result import Check, cannot_test, failed, not_applicable, passed

NAME = "AWS charges no more than the catalogue"
# The Price List's display name of each catalogued model (its ``model`` attribute).
DISPLAY_NAMES = {
    "anthropic.claude-haiku-4-5-20251001-v1:0": "Claude Haiku 4.5",
    "anthropic.claude-sonnet-4-5-20250929-v1:0": "Claude Sonnet 4.5",
    "anthropic.claude-sonnet-4-20250514-v1:0": "Claude Sonnet 4",
    "anthropic.claude-3-7-sonnet-20250219-v1:0": "Claude 3.7 Sonnet",
    "anthropic.claude-3-5-haiku-20241022-v1:0": "Claude 3.5 Haiku",
}
# Not the standard on-demand price of a token (cache, batch, tiers, reserved capacity).
OTHER_TIERS = ("cache", "batch", "priority", "flex", "long context", "provisioned", "reserved")
PER_MTOK = {"1K tokens": Decimal(1000), "1M tokens": Decimal(1)}
# How a price item names the route of each profile prefix (others: none of these words).
ROUTES = {"global": ("global",), "geo": ("cross-region", "cross region", "geo")}


def products(pricing: Any, region: str, display: str) -> Iterator[dict[str, Any]]:
    kwargs: dict[str, Any] = {
        "ServiceCode": "AmazonBedrock",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "TERM_MATCH", "Field": "model", "Value": display},
        ],
    }
    while True:
        page = pricing.get_products(**kwargs)
        for item in page.get("PriceList", []):
            yield json.loads(item) if isinstance(item, str) else item
        if not page.get("NextToken"):
            return
        kwargs["NextToken"] = page["NextToken"]


def token_prices(item: dict[str, Any]) -> Iterator[tuple[str, str, Decimal]]:
    """(direction "input"/"output", the item's words, USD per million tokens) per price."""
    attributes = item.get("product", {}).get("attributes", {})
    words = " ".join(str(v) for v in attributes.values()).lower()
    for term in item.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            text = f"{words} {dimension.get('description', '')}".lower()
            scale = PER_MTOK.get(str(dimension.get("unit")))
            if scale is None or any(tier in text for tier in OTHER_TIERS):
                continue
            kind = str(attributes.get("inferenceType", "")).lower()
            direction = "input" if "input" in kind else "output" if "output" in kind else ""
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if direction and usd is not None:
                yield direction, text, Decimal(str(usd)) * scale


def _route(prefix: str | None) -> str:
    return "global" if prefix == "global" else "geo" if prefix else "in-region"


def _for_route(found: list[tuple[str, Decimal]], route: str) -> set[Decimal]:
    """The prices whose words name this route (in-Region: none of the routes' words)."""
    every = [w for words in ROUTES.values() for w in words]
    if route == "in-region":
        matched = {p for text, p in found if not any(w in text for w in every)}
    else:
        matched = {p for text, p in found if any(w in text for w in ROUTES[route])}
    return matched or ({p for _, p in found} if len({p for _, p in found}) == 1 else set())


def charges_no_more(pricing: Any, s: Settings, region: str) -> Check:
    prefix, model = split_profile(s.model_id)
    display = DISPLAY_NAMES.get(model)
    if display is None:
        return not_applicable(NAME, f"{model} is not in the catalogue: cdk.json gives its prices")
    listed: dict[str, list[tuple[str, Decimal]]] = {"input": [], "output": []}
    for item in products(pricing, region, display):
        for direction, text, price in token_prices(item):
            listed[direction].append((text, price))
    if not listed["input"] or not listed["output"]:
        return cannot_test(
            NAME,
            f"the Price List has no on-demand token price for {display} in {region} "
            "(a model sold through AWS Marketplace may not be listed there)",
            "compare steps/lib/providers/catalogue.py with https://aws.amazon.com/bedrock/pricing/",
        )
    route = _route(prefix)
    terms = s.model_terms
    ours = {"input": terms.input_per_mtok, "output": terms.output_per_mtok}
    dearer, seen = [], []
    for direction in ("input", "output"):
        prices = _for_route(listed[direction], route)
        if len(prices) != 1:
            found = sorted({p for _, p in listed[direction]})
            return cannot_test(
                NAME,
                f"{display} in {region}: {direction} prices {', '.join(map(str, found))} "
                f"per million tokens, none tied to the {route} route alone",
                "compare the catalogue with https://aws.amazon.com/bedrock/pricing/",
            )
        (aws,) = prices
        seen.append(f"{direction} {aws} (catalogue {ours[direction]})")
        if aws > ours[direction]:
            dearer.append(f"{direction} {aws} > catalogue {ours[direction]}")
    where = f"{s.model_id} in {region}, USD per million tokens"
    if dearer:
        return failed(
            NAME,
            f"{where}: AWS charges more: {'; '.join(dearer)}; every reserve is too small",
            "set the model's prices in cdk.json (price_input_per_mtok, price_output_per_mtok) "
            "to AWS's, or fix the catalogue row, then make deploy",
        )
    return passed(NAME, f"{where}: {'; '.join(seen)}")
