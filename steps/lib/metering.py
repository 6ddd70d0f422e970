"""S5's input meter: fit the prompt into the input tokens its reservation paid for.

The prompt candidates come fullest first (prompt.candidates: the oldest history goes
first, then the lowest-ranked grounding). A candidate is accepted when its measure is
within the allowance, where the measure is

- its byte bound (``byte_bound.prompt_bound``) when that already fits: an upper bound of
  any tokenizer's count, so no call is needed; else
- Bedrock's CountTokens for the exact request (free; assumption A1 in pricing.py), at most
  ``MAX_COUNT_CALLS`` times per message; else, when CountTokens is unavailable (Region,
  error, throttle, offline) or its calls are used up, the byte bound again.

So what is sent is always within the allowance by a bound or by the provider's own count,
never by an estimate. If not even the barest candidate fits, nothing is sent (NotSent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .byte_bound import prompt_bound
from .errors import NotSent
from .pricing import Metering
from .prompt import Prompt

# A count is one HTTPS round trip; past a few, the byte bound decides (it only trims more).
MAX_COUNT_CALLS = 4


class CountUnavailable(Exception):
    """CountTokens could not count this request (the meter falls back to the byte bound)."""


# (system text, messages) -> exact input tokens of that Converse request.
Counter = Callable[[str, list[dict[str, Any]]], int]


@dataclass(frozen=True, slots=True)
class Fitted:
    prompt: Prompt
    input_tokens: int  # the measure that fit: exact count or byte bound, never an estimate
    metering: Metering
    count_calls: int
    count_failed: bool


def fit(candidates: Iterable[Prompt], allowance: int, counter: Counter | None) -> Fitted:
    calls, failed = 0, False
    for candidate in candidates:
        bound = prompt_bound(candidate.system, candidate.messages)
        if bound <= allowance:
            return Fitted(candidate, bound, "bytes", calls, failed)
        if counter is None or failed or calls >= MAX_COUNT_CALLS:
            continue
        calls += 1
        try:
            exact = counter(candidate.system, candidate.messages)
        except CountUnavailable:
            failed = True
            continue
        if exact <= allowance:
            return Fitted(candidate, exact, "count_tokens", calls, failed)
    raise NotSent(f"the prompt cannot fit the {allowance} input tokens reserved; nothing was sent")
