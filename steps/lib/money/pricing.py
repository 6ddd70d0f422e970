"""The money path as one proof: a day's (month's, visitor's) spend never passes its ceiling.

Words, used this way throughout money/: **the reserve** is an amount, the micro-USD set
aside for one message (``reserve_for``; ``reservedMicros`` on the wire and in DynamoDB).
**The reservation** is the DynamoDB transaction that holds a reserve on day, month and
visitor at once, and the ``RES#`` item it writes; to *reserve* is to make one
(ledger.py::reserve), to *settle* is to move it to the actual cost (ledger.py::reconcile),
and to *release* is to settle it when no model call was made.

The promise rests on two links, and this module is the first.

1. **Per message: actual <= reserve.** S3 (CostGate) reserves ``reserve_for(...)``; S6
   (Reconcile) settles ``actual_micros(...)``. Prices are USD per 1M tokens, which is
   exactly micro-USD per token, so every term is tokens x price, summed as Decimal and
   rounded UP once. The model's prices are the model catalogue's for the configured model
   id, profile prefix included (``Settings.model_terms``: providers/catalogue.py, or
   cdk.json's explicit prices for a model it does not know, A5). Each billed quantity has
   a bound:

   ======================  ======================================  ==========================
   billed quantity         bound                                   enforced by
   ======================  ======================================  ==========================
   input tokens            the input allowance ``A``, re-derived   S5: ``metering.fit`` trims
                           by S5 from ``reservedMicros``           the prompt until exact
                           (``input_allowance``)                   CountTokens or the byte
                                                                   bound (``byte_bound``)
                                                                   is <= A; ``Converse`` is
                                                                   never sent otherwise
   input price             the plain input price                   S5 sends no ``cachePoint``
                                                                   (bedrock.py), so nothing
                                                                   is billed as a cache write
   output tokens           ``max_output_tokens``                   ``inferenceConfig.maxTokens``
   embedding tokens        ``EMBEDDING_TOKEN_BOUND``               S4 cuts the query to that
                                                                   byte bound (retrieve.py)
   guardrail text units    ``guardrail_unit_bound``: the message   S5 assesses exactly the
                           in started ``GUARDRAIL_UNIT_CHARS`` of  current message, before
                           its byte bound, x filter policies       the call (ApplyGuardrail,
                                                                   source INPUT); the reply
                                                                   is never assessed
   ======================  ======================================  ==========================

   S5 re-derives ``A`` from the ``reservedMicros`` it is handed, at the prices it holds,
   before anything is sent, so the link holds even while S3 and S5 run different settings
   during a deploy (``NotSent`` then releases the reservation); S6 settles at least the
   cost S5 computed, so an S6 on older prices cannot under-count. The day check before
   every billed call: right before the embedding (S4), the guardrail and Converse (S5),
   one helper (money/billed_calls.py::Sender.before) refuses once the reservation's UTC
   day has ended, so the day charged is the day of each call.

2. **Per total: the reservations fit.** A reservation is admitted only under the
   conditional write ``total <= ceiling - reserve`` on day, month and visitor in one
   transaction; settling only moves a total by ``actual - reserve <= 0``. With
   ``ceiling_shards`` = N, day and month are N shards and the write is on one of them with
   ``ceiling // N`` as its ceiling, so the shards sum to at most the ceiling; settling
   moves the shard the reservation recorded. N is the count the month recorded when its
   first reservation opened it: each day/month item's condition requires it
   (``SHARDS_AGREE``; the item's first write ``SHARDS_RECORD_OR_AGREE``, with the month's
   record checked in the same transaction), so every reservation of a period divides by
   the same N. **The upgrade rule** (month_opening.py): an item written by code from before
   counts were recorded counts as recorded with the count that code used, so a month
   that holds such items opens with ``L = 1 +`` the highest shard holding one (1 for the
   unsharded ``GLOBAL``), not the deployed N: each old shard held at most
   ``ceiling // N_old <= ceiling // L``, and the opening checks that no shard >= L holds
   any. With pacing, the
   day's ceiling in the condition is ``allowance(now) <= ceiling // N`` (pacing.py, S3's
   clock): only stricter, still one transaction. A retry (conflict, throttle) resends the same
   conditional transaction, and a settlement retry that finds the reservation settled
   moves nothing; the spent-day memo only ever refuses. None of them can admit what the
   condition would not.

Metering per model (providers/catalogue.py says which): CountTokens (A1) for a model
bedrock-runtime counts; the byte bound (A2, A3) for every other, the default Claude Haiku
4.5 included (its count on the bedrock-mantle endpoint is documented but not built:
docs/internals.md).

Assumptions the proof relies on (docs/internals.md, "The cost bound", gives the sources):
A1 CountTokens reports what Converse bills for the same input (Bedrock user guide);
A2 a token covers at least one UTF-8 byte of text or of its NFKC form (``byte_bound``; the
   published Claude tokenizer normalises with NFKC);
A3 chat framing is within ``byte_bound``'s overhead constants (fallback only);
A4 a guardrail bills per policy per started 1,000 characters of the text it assessed
   (Bedrock pricing), and ApplyGuardrail assesses exactly the text it is given;
A5 the catalogue's row is what Bedrock bills for that model id (catalogue.py names its
   sources and what it could not confirm; an explicit cdk.json price may only raise it).

Where each step is enforced (paths under steps/, as ``file::function``):

- Lengths: request/contract.py::validate_request (S1, after API Gateway applied
  request/openapi.json) caps the message and each history turn in characters, refuses a
  message or turn with no letter or digit (it cannot be answered: nothing is reserved for
  it), and a message whose byte bound leaves no prompt within ``max_input_tokens``.
- The prices: runtime/settings.py::Settings.model_terms takes them from
  providers/catalogue.py::terms_for, and settings refuse (SettingsError: one line at
  synthesis and at ``serve``, a fail-closed 503 on Lambda) a model it does not know unless
  every price and the metering are given explicitly.
- The reserve: cost_gate.py::handler sizes it with ``reserve_for``, metered as
  providers/model_ids.py::metering_for says S5 will meter (exact only where the catalogue
  says CountTokens answers for the model and the Region offers it; S5's counter asks under
  the same rule, providers/bedrock.py::BedrockResponder.count_tokens); ``cost_bound``
  prices each quantity of the table at its bound.
- The reservation: money/ledger_items.py::reservation_items writes the condition, its parts
  named there (``TOTAL_ADMITS``, ``SHARDS_AGREE``, ``RESERVATION_IS_NEW``, ``MODE_IS_NORMAL``),
  the day's ``:max`` from money/pacing.py::Curve.allowance when pacing is on;
  money/ledger.py::reserve refuses up front a reserve above a ceiling (a new item would pass
  ``attribute_not_exists``) and reads a cancellation by item name.
- S5's own check: invoke.py::_fit derives ``A`` with ``input_allowance``;
  money/metering.py::fit sends only a prompt whose money/byte_bound.py::prompt_bound
  (A2, A3) or exact count (providers/bedrock.py::BedrockResponder.count_tokens, A1) is
  within ``A``, else NotSent; money/billed_calls.py::Sender.before checks the day (and
  the run's time budget) right before ApplyGuardrail and again right before Converse.
- The call: providers/bedrock.py::BedrockResponder.request sends ``maxTokens`` and no
  ``cachePoint``; runtime/clients.py::bedrock_runtime never retries, nor does the ASL's
  Invoke state, so one reservation pays for one call; BedrockResponder.guard sends the
  message alone (A4).
- The embedding: retrieve.py::handler cuts the query to ``TITAN_QUERY_MAX_BYTES``
  (money/byte_bound.py::cut_to_bound) and sends it only on the reservation's day
  (retrieve.py::before_embedding, through the same Sender.before).
- Settling: money/ledger_items.py::settlement_items moves the totals by ``actual -
  reserve`` under ``SETTLES_ONCE``; money/ledger.py::reconcile reports a repeat as
  ``already_settled``; reconcile.py::handler settles at least S5's ``invokeCostMicros``.
- Releasing, iff nothing was sent: statemachine/chat.asl.json routes ``NotSent`` (and an
  Invoke throttled past its retry, which never ran) and any S4 failure to
  ReleaseReservation; S5 raises NotSent for every failure before its first billed call
  and for none after it (money/billed_calls.py::Sender.failure); reconcile.py::handler
  settles it at ``release_micros`` (the query embedding's bound, the only thing that may
  have been billed).
- The memo: money/spent_memo.py::SpentMemo.refuses can only refuse, never admit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from functools import lru_cache
from typing import Any, Literal

from ..providers.interface import USAGE_KEYS
from ..runtime.settings import MICROS_PER_USD, Settings
from ..text import tokens
from .byte_bound import MESSAGE_OVERHEAD_TOKENS, fixed_prompt_bound, text_bound

# Titan Text Embeddings V2 takes at most 8,192 tokens; S4 cuts the query to this many bytes
# of byte bound (so at most this many tokens, A2) and the reserve pays for all of them.
TITAN_QUERY_MAX_BYTES = 8000
EMBEDDING_OVERHEAD_TOKENS = 8
EMBEDDING_TOKEN_BOUND = TITAN_QUERY_MAX_BYTES + EMBEDDING_OVERHEAD_TOKENS

GUARDRAIL_UNIT_CHARS = 1000  # Bedrock Guardrails bill per text unit of up to 1,000 characters
PRICED_UNITS = 1000  # and price them per 1,000 units
# Grounding in a reserve sized for the byte bound: the budget is in estimated tokens, and
# English prose runs about 4 bytes per token. Quality only: S5 trims to whatever was paid.
GROUNDING_BYTES_PER_TOKEN = 4

Metering = Literal["count_tokens", "bytes"]


@dataclass(frozen=True, slots=True)
class Reserve:
    """What S3 reserves for one message: the micro-USD and the input tokens they pay for."""

    micros: int
    input_tokens: int


# -- S3: the reserve -------------------------------------------------------------------------


def reserve_for(
    s: Settings,
    message: str,
    history: Sequence[Mapping[str, Any]],
    *,
    bare_system: str,
    metering: Metering,
) -> Reserve:
    """The reserve of one request: its input allowance priced at the worst case of the rest.

    ``bare_system`` is the system block without grounding (``prompt.system_text([])``).
    The allowance always holds it and the whole message at their byte bound, so S5 can
    always send at least (system + message). Beyond that floor it is sized to what the
    prompt will likely measure: with exact metering the fixed text and history by the
    project's estimate plus the grounding budget in tokens; without it, by their bytes. S5
    trims to whatever the allowance turns out to hold, so this sizing is about answer
    quality, never about the bound.
    """
    bound, estimate = _system_measures(bare_system)
    floor = fixed_prompt_bound(bound, message)
    system = estimate if metering == "count_tokens" else bound
    sized = (
        floor - bound + system + _history_tokens(history, metering) + _grounding_tokens(s, metering)
    )
    allowance = min(s.max_input_tokens, max(floor, sized))
    return Reserve(cost_bound(s, allowance, guarded_text=message), allowance)


@lru_cache(maxsize=4)
def _system_measures(system: str) -> tuple[int, int]:
    # The fixed system text is the same for every message: measure it once per container.
    return text_bound(system), tokens.count_tokens(system)


def _history_tokens(history: Sequence[Mapping[str, Any]], metering: Metering) -> int:
    measure = text_bound if metering == "bytes" else tokens.count_tokens
    return sum(MESSAGE_OVERHEAD_TOKENS + measure(str(t.get("content", ""))) for t in history)


def _grounding_tokens(s: Settings, metering: Metering) -> int:
    per_token = GROUNDING_BYTES_PER_TOKEN if metering == "bytes" else 1
    return s.grounding_token_budget * per_token


def cost_bound(s: Settings, input_tokens: int, *, guarded_text: str) -> int:
    """The most a message can cost with ``input_tokens`` of input (see the table above)."""
    return _ceil(_exact_cost_bound(s, input_tokens, guarded_text))


def _exact_cost_bound(s: Settings, input_tokens: int, guarded_text: str) -> Decimal:
    model = s.model_terms
    return (
        input_tokens * model.input_per_mtok
        + s.max_output_tokens * model.output_per_mtok
        + EMBEDDING_TOKEN_BOUND * s.price_embedding_per_mtok
        + guardrail_unit_bound(s, guarded_text) * _guardrail_unit_price(s)
    )


def guardrail_unit_bound(s: Settings, guarded_text: str) -> int:
    """Billed text units: the message's units x filter policies (A4).

    The message is counted by its byte bound, not its characters: whatever "character"
    means to the guardrail (code point or UTF-16 unit), it is at most one UTF-8 byte. The
    reply is never assessed: a model's token can decode to a thousand characters (the
    published Claude tokenizer has a token of 1,024 spaces), so no bound on the reply's
    length would be worth reserving.
    """
    if not s.guardrail_id:
        return 0
    return math.ceil(text_bound(guarded_text) / GUARDRAIL_UNIT_CHARS) * s.guardrail_policy_count


def largest_reserve_micros(s: Settings) -> int:
    """The largest reserve any accepted message can make: ``max_input_tokens`` of input and
    the longest guarded message. Ops use it for "the most one message can cost"."""
    longest = "\U0010ffff" * s.message_max_chars  # 4 bytes a character: the largest bound
    return cost_bound(s, s.max_input_tokens, guarded_text=longest)


# -- S5: the reservation, read back ----------------------------------------------------------


def input_allowance(s: Settings, reserved_micros: int, *, guarded_text: str) -> int:
    """The most input tokens ``reserved_micros`` pays for at these prices, all else at its
    bound: the inverse of ``cost_bound`` (``cost_bound(s, result, ...) <= reserved``).
    Negative when the reservation cannot pay even for the rest."""
    rest = _exact_cost_bound(s, 0, guarded_text)  # exact, not rounded: see below
    price = s.model_terms.input_per_mtok
    if reserved_micros < rest:
        return -1
    if price == 0:
        return s.max_input_tokens
    # A * price + rest <= reserved (an integer), so ceil() of it cannot pass reserved either;
    # and S3's reserved = ceil(A3 * price + rest) >= A3 * price + rest gives A >= A3: with the
    # same settings S5 never reads back less input than S3 paid for.
    allowance = int((Decimal(reserved_micros) - rest) / price)
    return min(allowance, s.max_input_tokens)


# -- S6: the settlement ----------------------------------------------------------------------


def actual_micros(
    s: Settings, usage: Mapping[str, object], embedding_tokens: int, guardrail_text_units: int = 0
) -> int:
    """The cost of one answered message from Converse usage, embedding and guardrail units."""
    counts, model = {key: _count(usage, key) for key in USAGE_KEYS}, s.model_terms
    total = (
        counts["inputTokens"] * model.input_per_mtok
        + counts["outputTokens"] * model.output_per_mtok
        + counts["cacheReadInputTokens"] * model.cache_read_per_mtok
        + counts["cacheWriteInputTokens"] * model.cache_write_per_mtok
        + _nonnegative(embedding_tokens, "embeddingTokens") * s.price_embedding_per_mtok
        + _nonnegative(guardrail_text_units, "guardrailTextUnits") * _guardrail_unit_price(s)
    )
    return _ceil(total)


def assessed_units(s: Settings, guarded_text: str) -> int:
    """The fewest units a guardrail bills for assessing the message: started 1,000-character
    units, per policy. S5 settles at least this even when the response reports fewer."""
    if not s.guardrail_id:
        return 0
    return math.ceil(len(guarded_text) / GUARDRAIL_UNIT_CHARS) * s.guardrail_policy_count


def release_micros(s: Settings) -> int:
    """What a reservation settles at when no model call was made: the query embedding may
    have been billed before S4 failed, so its bound stays on the ledger."""
    return _ceil(EMBEDDING_TOKEN_BOUND * s.price_embedding_per_mtok)


def _guardrail_unit_price(s: Settings) -> Decimal:
    # USD per 1,000 units -> micro-USD per unit.
    return s.price_guardrail_per_1k_units * (MICROS_PER_USD // PRICED_UNITS)


def _count(usage: Mapping[str, object], key: str) -> int:
    return _nonnegative(usage.get(key, 0), key)


def _nonnegative(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage {key} must be a non-negative integer, not {value!r}")
    return value


def _ceil(total: Decimal | int) -> int:
    return int(Decimal(total).to_integral_value(rounding=ROUND_CEILING))
