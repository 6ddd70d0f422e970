"""What a message can cost at most (the reservation) and what it did cost (the settlement).

Prices in settings are USD per 1M tokens, which is exactly micro-USD per token, so every
figure below is tokens x price in micro-USD, kept as Decimal and rounded UP once to an
integer. Because each term of the reserve bounds the matching term of the actual cost, and
ceil() is monotonic, ``actual_micros(...) <= reserve_micros(s)`` for any usage within the
bounds; the tests check that over a grid of usages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal

from .settings import Settings

# A Titan token is at least one UTF-8 byte, and a character is at most 4 bytes: a bound
# that holds for any text, whatever the tokenizer does with it.
MAX_TOKENS_PER_CHAR = 4
EMBEDDING_OVERHEAD_TOKENS = 8
# Guardrails also assess the model's output. Its length in characters is bounded through
# maxTokens; no production tokenizer has tokens longer than this on average over a reply.
MAX_CHARS_PER_OUTPUT_TOKEN = 16
GUARDRAIL_UNIT_CHARS = 1000

# models.USAGE_KEYS restated, not imported: the config wiring check follows imports
# (tests/infra/test_step_wiring.py), and models.py would hand S3 and S6 the model settings.
USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")


def query_max_chars(s: Settings) -> int:
    """The longest retrieval query: previous user turn + newline + message (retrieval.py)."""
    return s.history_turn_max_chars + 1 + s.message_max_chars


def embedding_token_bound(s: Settings) -> int:
    return query_max_chars(s) * MAX_TOKENS_PER_CHAR + EMBEDDING_OVERHEAD_TOKENS


def guardrail_unit_bound(s: Settings) -> int:
    """Billed text units: (input units + output units) x configured filter policies."""
    if not s.guardrail_id:
        return 0
    units_in = math.ceil(s.message_max_chars / GUARDRAIL_UNIT_CHARS)
    units_out = math.ceil(s.max_output_tokens * MAX_CHARS_PER_OUTPUT_TOKEN / GUARDRAIL_UNIT_CHARS)
    return (units_in + units_out) * s.guardrail_policy_count


def reserve_micros(s: Settings) -> int:
    """The worst case of one message, an upper bound of ``actual_micros``."""
    # Every input token may be billed at the dearest of plain input, cache write and cache read.
    input_price = max(
        s.price_input_per_mtok, s.price_cache_write_per_mtok, s.price_cache_read_per_mtok
    )
    total = (
        s.max_input_tokens * input_price
        + s.max_output_tokens * s.price_output_per_mtok
        + embedding_token_bound(s) * s.price_embedding_per_mtok
        + guardrail_unit_bound(s) * _guardrail_unit_price(s)
    )
    return _ceil(total)


def actual_micros(
    s: Settings, usage: Mapping[str, object], embedding_tokens: int, guardrail_text_units: int = 0
) -> int:
    """The cost of one answered message from Converse usage, embedding and guardrail units."""
    tokens = {key: _count(usage, key) for key in USAGE_KEYS}
    total = (
        tokens["inputTokens"] * s.price_input_per_mtok
        + tokens["outputTokens"] * s.price_output_per_mtok
        + tokens["cacheReadInputTokens"] * s.price_cache_read_per_mtok
        + tokens["cacheWriteInputTokens"] * s.price_cache_write_per_mtok
        + _nonnegative(embedding_tokens, "embeddingTokens") * s.price_embedding_per_mtok
        + _nonnegative(guardrail_text_units, "guardrailTextUnits") * _guardrail_unit_price(s)
    )
    return _ceil(total)


def _guardrail_unit_price(s: Settings) -> Decimal:
    # USD per 1,000 units -> micro-USD per unit.
    return s.price_guardrail_per_1k_units * Decimal(1000)


def _count(usage: Mapping[str, object], key: str) -> int:
    return _nonnegative(usage.get(key, 0), key)


def _nonnegative(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage {key} must be a non-negative integer, not {value!r}")
    return value


def _ceil(total: Decimal | int) -> int:
    return int(Decimal(total).to_integral_value(rounding=ROUND_CEILING))
