"""Load chat.asl.json: the single definition that CDK deploys and the local runtime runs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ASL_PATH = Path(__file__).resolve().with_name("chat.asl.json")
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def definition_text() -> str:
    return ASL_PATH.read_text(encoding="utf-8")


def placeholders(text: str | None = None) -> set[str]:
    """Every ${Name} the definition expects to be substituted."""
    return set(_PLACEHOLDER.findall(definition_text() if text is None else text))


def substitute(substitutions: Mapping[str, str], text: str | None = None) -> str:
    """The definition with every placeholder replaced; a missing or extra name is an error."""
    source = definition_text() if text is None else text
    expected = placeholders(source)
    if expected != set(substitutions):
        missing = sorted(expected - set(substitutions))
        extra = sorted(set(substitutions) - expected)
        raise ValueError(f"substitutions do not match the ASL: missing={missing} extra={extra}")
    return _PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], source)


def definition(substitutions: Mapping[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(substitute(substitutions))
    return result


def run_budget_seconds() -> float:
    """``withinSeconds`` of the run budget the ASL gives S4 and S5: every billed call ends
    within it (steps/lib/money/billed_calls.py)."""
    states = json.loads(definition_text())["States"]
    return float(states["Invoke"]["Parameters"]["budget"]["withinSeconds"])


def retry_waits(state: str) -> float:
    """The waits of ``state``'s retries when every attempt is throttled."""
    return state_retry_waits(json.loads(definition_text())["States"][state])


def state_retry_waits(state: Mapping[str, Any]) -> float:
    """The waits of a state's retries when every attempt fails (IntervalSeconds x
    BackoffRate^n, capped by MaxDelaySeconds; ASL defaults 1 s, 2.0, 3 attempts)."""
    waits = 0.0
    for retry in state.get("Retry", []):
        interval, rate = retry.get("IntervalSeconds", 1), retry.get("BackoffRate", 2.0)
        cap = retry.get("MaxDelaySeconds", float("inf"))
        waits += sum(min(interval * rate**n, cap) for n in range(retry.get("MaxAttempts", 3)))
    return waits
