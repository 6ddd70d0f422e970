"""`make bench-reserve`: how tight the reserve is, on the sample questions.

For each of the 57 sample questions (tests/data/retrieval_questions.json), the message is
taken through the real S4 (offline index and embedder) and S3/S5 money code, and compared:

- reserve: what S3 reserves, for each metering the model catalogue can choose
  (steps/lib/providers/catalogue.py, through model_ids.metering_for), the default model's
  first: the byte bound for Haiku 4.5 (it has no CountTokens on bedrock-runtime), exact
  counts for a model the user guide lists (Sonnet 4) in a Region that offers them;
- modelled actual: what that model would bill for the prompt S5 sends under that reserve,
  with input counted by the project's estimate (about Claude's count on English prose; it
  stands in for CountTokens here) and a 250-token reply, at the catalogue's prices.

Reports the reserve/actual ratio (goal <= 2x with exact metering) and how many messages a
$1 day admits at the reserve (the most that can be in flight at once) and at the actual
cost (what it pays for once settled). Replaces only the `bench:reserve` section of
docs/benchmarks.md. A benchmark, not a test: the figures are measured, never asserted.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from tests.bench import report

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "tests" / "data" / "retrieval_questions.json"
REPLY_TOKENS = 250
DAY_USD = 1
REGION = "us-east-1"  # offers CountTokens: the model decides the metering, not the Region
# (row label, model id): the default model first, then one the catalogue meters exactly.
MODELS = (
    ("Haiku 4.5, `global.` (the default)", "global.anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("Sonnet 4, `us.`", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
)


def _estimate(system: str, messages: list[dict[str, Any]]) -> int:
    from steps.lib.money import byte_bound
    from steps.lib.text import tokens

    texts = [t for m in messages for t in byte_bound.message_texts(m)]
    framing = byte_bound.REQUEST_OVERHEAD_TOKENS + byte_bound.MESSAGE_OVERHEAD_TOKENS * len(
        messages
    )
    return framing + tokens.count_tokens(system) + sum(tokens.count_tokens(t) for t in texts)


def _grounding(question: dict[str, Any]) -> list[dict[str, str]]:
    """What the real S4 hands S5 for this question (offline index and embedder)."""
    from steps import retrieve

    request = {"message": question["question"], "history": [], "page": question.get("page")}
    from steps.lib.request import identity

    event = {"request": request, "day": identity.day_of(time.time())}
    grounding: list[dict[str, str]] = retrieve.handler(event, None)["grounding"]
    return grounding


def measure(model_id: str) -> tuple[str, list[tuple[int, int]]]:
    """The metering the catalogue chooses for ``model_id`` in REGION, and (reserve, modelled
    actual) in micro-USD for every sample question."""
    from steps.lib.money import metering, pricing
    from steps.lib.providers import model_ids
    from steps.lib.runtime.settings import Settings
    from steps.lib.text import prompt

    s = Settings(model_backend="bedrock").replace(model_id=model_id)
    chosen = model_ids.metering_for(s, REGION)
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    counter = _estimate if chosen == "count_tokens" else None
    out = []
    for q in questions:
        message = q["question"]
        reserve = pricing.reserve_for(
            s, message, [], bare_system=prompt.system_text([]), metering=chosen
        )
        allowance = pricing.input_allowance(s, reserve.micros, guarded_text=message)
        candidates = prompt.candidates(s, message, [], _grounding(q), [])
        fitted = metering.fit(candidates, allowance, counter)
        sent = _estimate(fitted.prompt.system, fitted.prompt.messages)
        usage = {"inputTokens": sent, "outputTokens": REPLY_TOKENS}
        actual = pricing.actual_micros(s, usage, len(message.split()) + 2)
        out.append((reserve.micros, actual))
    return chosen, out


def _row(name: str, pairs: list[tuple[int, int]]) -> str:
    reserves = [r for r, _ in pairs]
    actuals = [a for _, a in pairs]
    ratios = [r / a for r, a in pairs]
    day = DAY_USD * 1_000_000
    return (
        f"| {name} | {statistics.median(reserves):,.0f} | {statistics.median(actuals):,.0f} | "
        f"{statistics.median(ratios):.2f}x | {max(ratios):.2f}x | "
        f"{day // max(reserves):,} | {int(day / statistics.mean(actuals)):,} |"
    )


def main() -> None:
    os.environ.setdefault("CHATGUARD_MODEL_BACKEND", "offline")  # S4: the offline index
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
    names = {"bytes": "byte bound", "count_tokens": "exact (CountTokens)"}
    rows = []
    for label, model_id in MODELS:
        chosen, pairs = measure(model_id)
        rows.append(_row(f"{names[chosen]}: {label}", pairs))
    header = (
        f"Measured by `make bench-reserve`: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}. 57 sample questions "
        "(`tests/data/retrieval_questions.json`), no history, grounding from the offline "
        f"index; each metering the model catalogue chooses in {REGION} (a CountTokens "
        "Region), the default model's first, at the catalogue's prices for that model; a "
        "250-token reply; input of the prompt S5 sends counted by the project's estimate, "
        "which stands in for CountTokens (about Claude's count on English prose). Micro-USD "
        "per message, medians."
    )
    table = "\n".join(
        [
            "| metering: model | reserve | modelled actual | reserve / actual | worst ratio | "
            f"${DAY_USD} day at the reserve | ${DAY_USD} day at the actual |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    note = (
        "The reserve is what a message holds while in flight; the day admits at least "
        '"at the reserve" messages even if all arrive at once, and about "at the actual" '
        "once they settle. Haiku 4.5, the default, is not on the user guide's CountTokens "
        "list, so the catalogue meters it by the byte bound everywhere: its reserve holds "
        "the prompt and 4 bytes per grounding token, up to `max_input_tokens`. With exact "
        "metering the reserve is the message and the fixed prompt at their byte bound, the "
        "grounding budget in tokens and maxTokens of output: the rest of the gap is the "
        "output bound (512 tokens reserved, 250 used)."
    )
    body = f"{header}\n\n{table}\n\n{note}"
    print(body)
    report.write_section("reserve", "Reserve sizing", body)


if __name__ == "__main__":
    main()
