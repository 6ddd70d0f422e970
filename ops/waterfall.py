"""One waterfall renderer for a request's steps and the AWS calls inside them.

`chatguard trace last` (local recorder) and `chatguard traces` (X-Ray) both turn their
data into Spans; the picture is the same whether the request ran on moto or on AWS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BAR_WIDTH = 32


@dataclass(frozen=True, slots=True)
class Span:
    depth: int  # 0 = a step (or a segment), 1 = a call inside it, ...
    name: str
    start_ms: float  # from the start of the request
    ms: float
    note: str = ""  # the step's decision, a call's error


def render(spans: Sequence[Span], *, title: str = "") -> str:
    if not spans:
        return (title + "\n" if title else "") + "  (no steps recorded)"
    total = max(s.start_ms + s.ms for s in spans) or 1.0
    label_width = max(len(_label(s)) for s in spans)
    lines = [title] if title else []
    for span in spans:
        lines.append(
            f"{_label(span).ljust(label_width)}  {span.start_ms:8.1f} {span.ms:8.1f} ms  "
            f"{_bar(span, total)}  {span.note}".rstrip()
        )
    return "\n".join(lines)


def _label(span: Span) -> str:
    return "  " * span.depth + span.name


def _bar(span: Span, total: float) -> str:
    start = int(BAR_WIDTH * span.start_ms / total)
    length = max(1, round(BAR_WIDTH * span.ms / total))
    start = min(start, BAR_WIDTH - 1)
    return ("." * start + "#" * min(length, BAR_WIDTH - start)).ljust(BAR_WIDTH, ".")
