"""The model catalogue: what each chat model costs, whether Bedrock counts its tokens, and
its largest output, per inference-profile prefix. One table, in code, so a model id and
its prices cannot drift apart: settings.py takes the reserve's prices from here and
refuses a model this table does not know unless cdk.json gives its prices and metering
explicitly (docs/internals.md, "The model catalogue").

A leaf module (stdlib only): settings.py, the steps, the CDK app and ops share it.

Sources, and what could not be confirmed from them:

- Prices: Amazon Bedrock pricing (https://aws.amazon.com/bedrock/pricing/), USD per
  million tokens, on-demand, standard (not batch, not priority, not long-context) tier,
  5-minute cache writes. The figures agree with Anthropic's list prices
  (https://platform.claude.com/docs/en/about-claude/pricing): Haiku 4.5 $1 in, $5 out,
  $1.25 cache write, $0.10 cache read; Sonnet 4.5, Sonnet 4 and 3.7 Sonnet $3 / $15 /
  $3.75 / $0.30; 3.5 Haiku $0.80 / $4 / $1 / $0.08. For the 4.5 models Bedrock's list
  price is the ``global.`` profile's; a geographic (``us.``, ``eu.``, ``apac.``, ``jp.``,
  ``au.``) or in-Region (bare id) call costs 10 % more. Unconfirmed: the pricing page
  itself could not be read where this table was written, so the 10 % figure comes from
  reports that quote it, and the older models' rows (Sonnet 4, 3.7 Sonnet, 3.5 Haiku: one
  price for every profile, no premium; Sonnet 4's ``global.`` profile) are the list
  prices, not checked per profile. Check a row against the page before relying on it.
- CountTokens on ``bedrock-runtime``: Amazon Bedrock user guide, "Monitor your token usage
  by counting tokens before running inference"
  (https://docs.aws.amazon.com/bedrock/latest/userguide/count-tokens.html). Its supported
  list names Claude 3.5 Haiku, 3.5 Sonnet (v1, v2), 3.7 Sonnet, Opus 4 and Sonnet 4, and it
  warns that models launched with cross-Region inference only (Haiku 4.5, Sonnet 4.5)
  may not support it there. Third-party libraries report CountTokens answering for Haiku
  4.5's bare id; the table follows the guide, because the wrong "yes" guts every answer
  (the reserve is sized for exact counts that never come) while the wrong "no" only
  reserves a little more. The guide's alternative, Anthropic's ``count_tokens`` on the
  ``bedrock-mantle`` endpoint, is not used yet: docs/internals.md (A1b) cites what AWS
  documents for it and what no page found says (its IAM action, its price, that its
  count bounds what Converse bills).
- Largest output: Haiku 4.5's Bedrock model card (64K tokens); for the others, Anthropic's
  models overview (Sonnet 4.5, Sonnet 4, 3.7 Sonnet: 64,000; 3.5 Haiku: 8,192), not
  re-read for this table (unconfirmed). It only refuses a ``max_output_tokens`` the model
  would reject; the reserve uses ``max_output_tokens`` itself.

A CountTokens claim is checked on the account after deployment: ``counts_tokens`` is the
question a post-deploy self-test asks of the configured model.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

# Profile prefixes ("" is the bare model id, in-Region). Geographic profiles price alike.
GEO = ("us", "eu", "apac", "jp", "au")
BARE = ("",)


@dataclass(frozen=True, slots=True)
class ModelTerms:
    """What one model id costs (USD per million tokens, i.e. micro-USD per token) and how
    its input can be metered."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cache_write_per_mtok: Decimal
    cache_read_per_mtok: Decimal
    counts_tokens: bool  # CountTokens answers for it on bedrock-runtime
    max_output_tokens: int | None  # None: not catalogued (prices given in cdk.json)


_HAIKU_45 = "anthropic.claude-haiku-4-5-20251001-v1:0"
_SONNET_45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"
_SONNET_4 = "anthropic.claude-sonnet-4-20250514-v1:0"
_SONNET_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"
_HAIKU_35 = "anthropic.claude-3-5-haiku-20241022-v1:0"

# The one table. A model id is "<prefix>.<bare id>", or the bare id alone for prefix "".
# fmt: off
TABLE: tuple[tuple[str, tuple[str, ...], str, str, str, str, bool, int], ...] = (
    # bare model id   prefixes          input    output   c.write   c.read  CountTokens  max out
    (_HAIKU_45,  ("global",),          "1.00",  "5.00",  "1.25",   "0.10",  False, 64_000),
    (_HAIKU_45,  GEO + BARE,           "1.10",  "5.50",  "1.375",  "0.11",  False, 64_000),
    (_SONNET_45, ("global",),          "3.00", "15.00",  "3.75",   "0.30",  False, 64_000),
    (_SONNET_45, GEO + BARE,           "3.30", "16.50",  "4.125",  "0.33",  False, 64_000),
    (_SONNET_4,  ("global", *GEO, *BARE), "3.00", "15.00", "3.75", "0.30", True, 64_000),
    (_SONNET_37, GEO + BARE,           "3.00", "15.00",  "3.75",   "0.30",  True,  64_000),
    (_HAIKU_35,  GEO + BARE,           "0.80",  "4.00",  "1.00",   "0.08",  True,   8_192),
)
# fmt: on


def _model_id(prefix: str, bare: str) -> str:
    return f"{prefix}.{bare}" if prefix else bare


CATALOGUE: dict[str, ModelTerms] = {
    _model_id(prefix, bare): ModelTerms(
        Decimal(i), Decimal(o), Decimal(cw), Decimal(cr), counts, max_out
    )
    for bare, prefixes, i, o, cw, cr, counts, max_out in TABLE
    for prefix in prefixes
}


def lookup(model_id: str) -> ModelTerms | None:
    """The catalogue's terms for a Converse model id (profile or bare), or None."""
    return CATALOGUE.get(model_id)


def counts_tokens(model_id: str) -> bool:
    """Does the catalogue say CountTokens works on bedrock-runtime for this model? False
    for a model it does not know: then only cdk.json's ``model_metering`` can say so."""
    terms = lookup(model_id)
    return terms is not None and terms.counts_tokens


# cdk.json keys that give a model's terms explicitly -> the ModelTerms field each sets.
PRICE_KEYS = {
    "price_input_per_mtok": "input_per_mtok",
    "price_output_per_mtok": "output_per_mtok",
    "price_cache_write_per_mtok": "cache_write_per_mtok",
    "price_cache_read_per_mtok": "cache_read_per_mtok",
}
METERING_KEY = "model_metering"  # "count_tokens" | "bytes"; "" = the catalogue's


class NotCatalogued(ValueError):
    """The model's terms cannot be known: a one-line message that names what to give."""


def terms_for(model_id: str, prices: dict[str, Decimal | None], metering: str) -> ModelTerms:
    """The terms the money path uses for ``model_id``, given cdk.json's explicit keys.

    A catalogued model takes its terms from the table; an explicit price may only raise one
    (a price increase before the table is updated), never lower it, and ``count_tokens``
    may not be claimed where the table says no: either would let a reserve fall short, or
    gut the answers. A model the table does not know needs every price and the metering.
    """
    known = lookup(model_id)
    if known is None:
        missing = [key for key, value in prices.items() if value is None]
        if missing or not metering:
            need = ", ".join([*missing, *([] if metering else [METERING_KEY])])
            raise NotCatalogued(
                f"model_id {model_id!r} is not in the model catalogue "
                f"(steps/lib/providers/catalogue.py): give {need} in cdk.json"
            )
        return _terms(prices, counts_tokens=metering == "count_tokens", max_output=None)
    chosen: dict[str, Decimal | None] = {}
    for key, value in prices.items():
        listed: Decimal = getattr(known, PRICE_KEYS[key])
        if value is not None and value < listed:
            raise NotCatalogued(
                f"{key} {value} is below the catalogue's {listed} for {model_id!r}: "
                "the reserve would fall short"
            )
        chosen[key] = listed if value is None else value
    if metering == "count_tokens" and not known.counts_tokens:
        raise NotCatalogued(
            f"the catalogue says CountTokens does not answer for {model_id!r} on "
            "bedrock-runtime: model_metering must be bytes or empty"
        )
    counts = known.counts_tokens and metering != "bytes"
    return _terms(chosen, counts_tokens=counts, max_output=known.max_output_tokens)


def _terms(
    prices: dict[str, Decimal | None], *, counts_tokens: bool, max_output: int | None
) -> ModelTerms:
    values = [prices[key] for key in PRICE_KEYS]
    if any(v is None for v in values):
        raise NotCatalogued("every price must be given")  # callers fill them; a guard
    i, o, cw, cr = (Decimal(v or 0) for v in values)
    return ModelTerms(i, o, cw, cr, counts_tokens, max_output)
