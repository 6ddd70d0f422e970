"""Plain-text rendering of one outcome for `chatguard chat` and `chatguard demo`."""

from __future__ import annotations

import logging
import os
import sys
import textwrap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from local.engine.runtime import Outcome
from local.engine.tracing import StepRecord


def step_table(steps: Iterable[StepRecord]) -> str:
    rows = [("state", "decision", "ms", "aws calls")]
    total = 0.0
    for step in steps:
        total += step.ms
        calls = ", ".join(f"{c.service}.{c.operation}" for c in step.calls) or "-"
        rows.append((step.state, step.decision, f"{step.ms:.1f}", calls))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}" for r in rows
    ]
    lines.insert(1, "  " + "-" * (sum(widths) + 4 + 2 + max(len(r[3]) for r in rows)))
    return "\n".join(lines)


def reply_text(outcome: Outcome) -> str:
    body: dict[str, Any] = outcome.body
    text = body.get("reply") or body.get("error") or ""
    flags = [name for name in ("limited", "degraded") if body.get(name)]
    head = f"HTTP {outcome.status}" + (f" ({', '.join(flags)})" if flags else "")
    lines = [head, *(textwrap.wrap(str(text), width=88) or [""])]
    sources = body.get("sources") or []
    if sources:
        lines.append("sources:")
        lines.extend(f"  {s.get('page')}  ({s.get('heading')})" for s in sources)
    return "\n".join(lines)


def outcome_text(outcome: Outcome) -> str:
    if not outcome.steps:  # refused at the edge: an empty table would only look broken
        return f"{reply_text(outcome)}\n\n  no step ran: the edge answered before the workflow"
    return f"{reply_text(outcome)}\n\n{step_table(outcome.steps)}\n  total {outcome.ms:.1f} ms"


@contextmanager
def quiet_logs(*, show_libraries: bool, show_steps: bool) -> Iterator[None]:
    """A terminal session wants the table, not every log line: hide moto's and botocore's
    (an ASL Catch at work looks like an error to moto) and, unless asked, the steps' JSON
    lines. Levels and the environment are restored on exit (the CLI also runs in tests)."""
    names = ([] if show_libraries else ["moto", "botocore"]) + ([] if show_steps else ["chatguard"])
    saved = [(logging.getLogger(name), logging.getLogger(name).level) for name in names]
    saved_env = os.environ.get("POWERTOOLS_LOG_LEVEL")
    for logger, _level in saved:
        logger.setLevel(logging.CRITICAL)
    if not show_steps:
        os.environ["POWERTOOLS_LOG_LEVEL"] = "CRITICAL"  # read at every line offline
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)
        if saved_env is None:
            os.environ.pop("POWERTOOLS_LOG_LEVEL", None)
        else:
            os.environ["POWERTOOLS_LOG_LEVEL"] = saved_env


@contextmanager
def message_lines(*, enabled: bool) -> Iterator[None]:
    """`chatguard serve`'s default output: one line per chat message on stderr, with the
    time (local/server/routes.py, `message_line`)."""
    logger = logging.getLogger("chatguard.local.messages")
    if not enabled:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
