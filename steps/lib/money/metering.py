"""S5's input meter: fit the prompt into the input tokens its reservation paid for.

The prompt candidates come fullest first (prompt.candidates: the oldest history goes
first, then the lowest-ranked grounding). A candidate is accepted when its measure is
within the allowance, where the measure is

- its byte bound (``byte_bound.prompt_bound``) when that already fits: an upper bound of
  any tokenizer's count, so no call is needed; else
- Bedrock's CountTokens for the exact request (free; assumption A1 in pricing.py), when the
  model catalogue says it answers for this model and the Region offers it, at most
  ``MAX_COUNT_CALLS`` times per message and none started after ``COUNT_BUDGET_SECONDS``;
  else, when CountTokens is not offered (model, Region, offline: ``CountNotOffered``, not
  a failure), fails (error, throttle) or its calls or
  time are used up, the byte bound again.

Counting must never crowd out the call it meters: its client has short timeouts
(clients.bedrock_count: 0.5 s to connect, 1.5 s to read, no retry), so counting takes at
most ``COUNT_BUDGET_SECONDS`` + 2 s, which tests/infra/test_timeout_order.py adds to the
run's worst case; what follows is sent only within the run budget (billed_calls.py).

So what is sent is always within the allowance by a bound or by the provider's own count,
never by an estimate. If not even the barest candidate fits, nothing is sent (NotSent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..providers.interface import CountNotOffered, CountUnavailable
from ..runtime.errors import NotSent
from ..text.prompt import Prompt
from .byte_bound import prompt_bound
from .pricing import Metering

# A count is one HTTPS round trip; past a few, the byte bound decides (it only trims more).
MAX_COUNT_CALLS = 4
COUNT_BUDGET_SECONDS = 1.0


# (system text, messages) -> exact input tokens of that Converse request.
Counter = Callable[[str, list[dict[str, Any]]], int]


@dataclass(frozen=True, slots=True)
class Fitted:
    prompt: Prompt
    input_tokens: int  # the measure that fit: exact count or byte bound, never an estimate
    metering: Metering
    count_calls: int
    count_failed: bool


def fit(
    candidates: Iterable[Prompt],
    allowance: int,
    counter: Counter | None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Fitted:
    calls, failed, offered, started = 0, False, counter is not None, clock()
    for candidate in candidates:
        bound = prompt_bound(candidate.system, candidate.messages)
        if bound <= allowance:
            return Fitted(candidate, bound, "bytes", calls, failed)
        out_of_time = clock() - started >= COUNT_BUDGET_SECONDS
        if counter is None or not offered or failed or calls >= MAX_COUNT_CALLS or out_of_time:
            continue
        try:
            exact = counter(candidate.system, candidate.messages)
        except CountNotOffered:  # the catalogue or the Region says no: not a failure
            offered = False
            continue
        except CountUnavailable:
            calls, failed = calls + 1, True
            continue
        calls += 1
        if exact <= allowance:
            return Fitted(candidate, exact, "count_tokens", calls, failed)
    raise NotSent(f"the prompt cannot fit the {allowance} input tokens reserved; nothing was sent")
