"""`chatguard doctor`: does the model answer a full-length reply within S5's read timeout?

S5 calls Converse without streaming, so the whole reply arrives at once and its read
timeout (``bedrock_read_timeout_seconds``, 10 s by default) bounds the whole generation. A
model that needs longer for ``max_output_tokens`` tokens fails every long answer with a 503
whose reservation stands. This times one Converse call asking for a long answer at the
configured maximum output, with the operator's client (its own timeout is longer), and
compares. When the model stops before the maximum, the time is scaled to the maximum by
its output rate (a linear estimate, said so in the line).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from steps.lib.runtime.settings import Settings

from .result import Check, cannot_test, failed, passed

NAME = "a full-length reply fits Converse's read timeout"
LONG_ASK = (
    "Write the numbers from one to two thousand in English words, one per line, with no other text."
)


def reply_time(
    runtime: Any, s: Settings, clock: Callable[[], float] = time.monotonic
) -> tuple[float, int]:
    """Seconds one Converse call took at maxTokens = max_output_tokens, and its output tokens."""
    started = clock()
    answer = runtime.converse(
        modelId=s.model_id,
        messages=[{"role": "user", "content": [{"text": LONG_ASK}]}],
        inferenceConfig={"maxTokens": s.max_output_tokens},
    )
    elapsed = clock() - started
    return elapsed, int(answer.get("usage", {}).get("outputTokens", 0))


def fits_read_timeout(
    runtime: Any, s: Settings, clock: Callable[[], float] = time.monotonic
) -> Check:
    elapsed, tokens = reply_time(runtime, s, clock)
    limit = s.bedrock_read_timeout_seconds
    if tokens <= 0:
        return cannot_test(
            NAME, f"the reply reported no output tokens ({elapsed:.1f} s)", "run doctor again"
        )
    full = elapsed if tokens >= s.max_output_tokens else elapsed * s.max_output_tokens / tokens
    measured = f"{tokens} tokens in {elapsed:.1f} s"
    if tokens < s.max_output_tokens:
        measured += f", about {full:.1f} s for {s.max_output_tokens} at that rate"
    if full >= limit:
        return failed(
            NAME,
            f"{s.model_id}: {measured}, not under the {limit} s read timeout: long answers 503",
            "lower max_output_tokens in cdk.json, or raise bedrock_read_timeout_seconds within "
            "the run budget (steps/lib/runtime/stages.py), then make deploy",
        )
    return passed(NAME, f"{s.model_id}: {measured}, under the {limit} s read timeout")
