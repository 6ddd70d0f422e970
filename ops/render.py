"""Plain-text tables and money for the terminal: no dependency, stable column widths."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

MICROS_PER_USD = 1_000_000


def usd(micros: int) -> str:
    """Micro-USD as dollars with enough places to see a single message's cost."""
    text = f"{abs(Decimal(micros)) / MICROS_PER_USD:,.6f}"
    while text.endswith("0") and len(text.split(".")[1]) > 2:
        text = text[:-1]
    return ("-$" if micros < 0 else "$") + text


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)
