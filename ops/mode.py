"""`chatguard mode normal|degraded|off`: the operator switch CostGate reads.

One item, ``CONFIG``/``MODE`` with attribute ``mode``. CostGate checks it inside its
reservation transaction, so a switch applies from the next message. ``degraded`` answers
from the site's own text at zero model cost; ``off`` answers a short static message.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from steps.lib.money import ledger


class ModeReport(TypedDict):
    mode: str
    previous: str
    changed: bool


class ModeError(ValueError):
    pass


def read(client: Any, table_name: str, *, now: float | None = None) -> str:
    return ledger.read_mode(client, table_name, now=time.time() if now is None else now)


def write(client: Any, table_name: str, mode: str, *, now: float | None = None) -> ModeReport:
    """Set the switch; an unknown mode is refused before anything is written."""
    if mode not in ledger.MODES:
        raise ModeError(f"mode must be one of {', '.join(ledger.MODES)}, not {mode!r}")
    now = time.time() if now is None else now
    previous = read(client, table_name, now=now)
    # No expiresAt: the switch stays where the operator put it until they move it.
    client.put_item(
        TableName=table_name,
        Item={**ledger.MODE_KEY, "mode": {"S": mode}, "updatedAt": {"N": str(int(now))}},
    )
    return ModeReport(mode=mode, previous=previous, changed=previous != mode)


def render(report: ModeReport) -> str:
    if not report["changed"]:
        return f"mode is already {report['mode']}"
    effect = {
        "normal": "answers use the model again, within the ceilings",
        "degraded": "answers come verbatim from the site's own text, zero model cost",
        "off": "every message gets a short static reply, zero cost",
    }[report["mode"]]
    return (
        f"mode: {report['previous']} -> {report['mode']} ({effect}); applies from the next message"
    )
