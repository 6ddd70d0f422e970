"""`chatguard spend`: totals beside ceilings, open versus settled reservations, and the
visitors who cost the most (salted same-day hashes only: the table never holds an IP).

`collect` reads the DynamoDB items of docs/internals.md with the ledger's own key helpers
(the day and month totals summed over every ceiling shard) and returns a JSON-ready
report; the local admin route returns the same report, so one renderer serves both.
Items past their ``expiresAt`` are ignored (TTL deletes lazily).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, TypedDict

from steps.lib.money import ledger, pacing
from steps.lib.request.identity import day_of
from steps.lib.runtime.settings import MAX_SHARDS, Settings

from .doctor.message import PROBE_ATTRIBUTE, PROBE_VALUE
from .render import table, usd

TOP_VISITORS = 10


class SpendReport(TypedDict):
    day: str
    month: str
    mode: str
    day_micros: int
    day_ceiling_micros: int
    month_micros: int
    month_ceiling_micros: int
    visitor_ceiling_micros: int
    reserve_micros: int
    ceiling_shards: int
    paced_released_micros: int | None  # what pacing has released of the day (None: off)
    paced_at: str  # the UTC time it was computed at, HH:MM
    open_reservations: int
    open_micros: int
    settled_reservations: int
    settled_reserved_micros: int
    settled_actual_micros: int
    # Reservations `chatguard doctor` marked as its own real message (ops/doctor/message.py);
    # counted in the totals above too, since they were billed like any other.
    doctor_reservations: int
    doctor_micros: int
    visitors: int
    top_visitors: list[dict[str, Any]]


def today() -> str:
    return day_of(time.time())


def check_period(day: str, month: str | None) -> None:
    """A typo would silently read empty items: refuse it instead."""
    try:
        datetime.strptime(day, "%Y-%m-%d")
        if month is not None:
            datetime.strptime(month, "%Y-%m")
    except (TypeError, ValueError):
        raise ValueError("--day takes YYYY-MM-DD and --month YYYY-MM") from None


def collect(
    client: Any,
    table_name: str,
    s: Settings,
    *,
    day: str,
    month: str | None = None,
    now: float | None = None,
) -> SpendReport:
    from steps.lib.money.pricing import largest_reserve_micros

    now = time.time() if now is None else now
    month = month or ledger.month_of(day)
    # Every shard that can exist, not only the current count: after ceiling_shards is
    # lowered, what the removed shards hold was still spent (16 reads, an operator command).
    shards = range(MAX_SHARDS)
    day_micros = sum(_n(_get(client, table_name, ledger.day_key(day, k), now), "costMicros")
                     for k in shards)  # fmt: skip
    month_micros = sum(
        _n(_get(client, table_name, ledger.month_key(month, k), now), "costMicros") for k in shards
    )
    mode_item = _get(client, table_name, ledger.MODE_KEY, now)
    # The count the month recorded (its reservations use it), else the configured one.
    shards_item = _get(client, table_name, ledger.shards_key(month), now)
    recorded = _n(shards_item, "shards") or s.ceiling_shards
    released = _released(s, day, recorded, now)
    visitors: list[dict[str, Any]] = []
    res = {"open": 0, "open_micros": 0, "settled": 0, "settled_reserved": 0, "settled_actual": 0,
           "doctor": 0, "doctor_micros": 0}  # fmt: skip
    for item in _scan(client, table_name, day, now):
        pk = item["pk"]["S"]
        if pk.startswith("VISITOR#"):
            visitors.append(
                {
                    "visitor": pk.removeprefix("VISITOR#"),
                    "cost_micros": _n(item, "costMicros"),
                    "messages": _n(item, "msgCount"),
                }
            )
        elif pk.startswith("RES#"):
            _count_reservation(res, item)
    visitors.sort(key=lambda v: (-v["cost_micros"], -v["messages"], v["visitor"]))
    return SpendReport(
        day=day,
        month=month,
        mode=_s(mode_item, "mode") or "normal",
        day_micros=day_micros,
        day_ceiling_micros=s.daily_ceiling_micros,
        month_micros=month_micros,
        month_ceiling_micros=s.monthly_ceiling_micros,
        visitor_ceiling_micros=s.visitor_ceiling_micros,
        reserve_micros=largest_reserve_micros(s),
        ceiling_shards=recorded,
        paced_released_micros=released,
        paced_at=datetime.fromtimestamp(now, UTC).strftime("%H:%M"),
        open_reservations=res["open"],
        open_micros=res["open_micros"],
        settled_reservations=res["settled"],
        settled_reserved_micros=res["settled_reserved"],
        settled_actual_micros=res["settled_actual"],
        doctor_reservations=res["doctor"],
        doctor_micros=res["doctor_micros"],
        visitors=len(visitors),
        top_visitors=visitors[:TOP_VISITORS],
    )


def render(report: SpendReport) -> str:
    rows = [
        [
            "day " + report["day"],
            usd(report["day_micros"]),
            usd(report["day_ceiling_micros"]),
            _pct(report["day_micros"], report["day_ceiling_micros"]),
        ],
        [
            "month " + report["month"],
            usd(report["month_micros"]),
            usd(report["month_ceiling_micros"]),
            _pct(report["month_micros"], report["month_ceiling_micros"]),
        ],
    ]
    lines = [f"mode: {report['mode']}", table(["total", "spent", "ceiling", "used"], rows), ""]
    if report["paced_released_micros"] is not None:
        lines.insert(1, f"paced: {usd(report['paced_released_micros'])} of "
                        f"{usd(report['day_ceiling_micros'])} released at "
                        f"{report['paced_at']} UTC")  # fmt: skip
    lines.append(
        f"reservations on {report['day']}: {report['open_reservations']} open "
        f"({usd(report['open_micros'])} held), {report['settled_reservations']} settled "
        f"({usd(report['settled_reserved_micros'])} reserved -> "
        f"{usd(report['settled_actual_micros'])} actual)"
        + (
            f"; {report['doctor_reservations']} of them chatguard doctor's own message "
            f"({usd(report['doctor_micros'])})"
            if report["doctor_reservations"]
            else ""
        )
    )
    lines.append(f"largest reserve one message can make: {usd(report['reserve_micros'])}")
    if report["ceiling_shards"] > 1:
        lines.append(f"totals summed over {report['ceiling_shards']} ceiling shards")
    lines.append("")
    ceiling = report["visitor_ceiling_micros"]
    lines.append(
        f"top visitors of {report['visitors']} (salted same-day hashes; cap {usd(ceiling)} each)"
    )
    visitor_rows = [
        [
            v["visitor"][:16],
            usd(v["cost_micros"]),
            str(v["messages"]),
            _pct(v["cost_micros"], ceiling),
        ]
        for v in report["top_visitors"]
    ]
    lines.append(
        table(["visitor", "cost", "messages", "of cap"], visitor_rows)
        if visitor_rows
        else "  (none)"
    )
    return "\n".join(lines)


def _released(s: Settings, day: str, shards: int, now: float) -> int | None:
    """What pacing has released of ``day`` by ``now``, summed over the shards as the
    ledger's conditions see it (None with pacing off, or for a day that is over)."""
    curve = pacing.from_settings(s.pacing, s.pacing_burst_share, s.pacing_curve)
    seconds = pacing.seconds_into(day, now)
    if curve is None or seconds >= pacing.DAY_SECONDS:
        return None
    return shards * curve.allowance(s.daily_ceiling_micros // shards, seconds)


def _count_reservation(res: dict[str, int], item: dict[str, Any]) -> None:
    if _s(item, "status") == "void":  # a failed S3's request id, claimed: it holds nothing
        return
    settled = _s(item, "status") == "settled"
    if _s(item, PROBE_ATTRIBUTE) == PROBE_VALUE:
        res["doctor"] += 1
        res["doctor_micros"] += _n(item, "actualMicros" if settled else "reservedMicros")
    if settled:
        res["settled"] += 1
        res["settled_reserved"] += _n(item, "reservedMicros")
        res["settled_actual"] += _n(item, "actualMicros")
    else:
        # Open = reserved and never settled: in flight, or a model call whose reconcile
        # failed (the reservation stands, so spend is over-counted, never under).
        res["open"] += 1
        res["open_micros"] += _n(item, "reservedMicros")


def _get(client: Any, table_name: str, key: ledger.Key, now: float) -> dict[str, Any]:
    return ledger.get_item(client, table_name, key, now=now) or {}


def _scan(client: Any, table_name: str, day: str, now: float) -> Iterator[dict[str, Any]]:
    """Today's visitor items and reservations: a small scan (every item expires in days)."""
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "FilterExpression": "(begins_with(pk, :v) AND sk = :day) OR "
        "(begins_with(pk, :r) AND #day = :day)",
        "ExpressionAttributeNames": {"#day": "day"},
        "ExpressionAttributeValues": {
            ":v": {"S": "VISITOR#"},
            ":r": {"S": "RES#"},
            ":day": {"S": day},
        },
    }
    while True:
        page = client.scan(**kwargs)
        for item in page.get("Items", []):
            if "expiresAt" not in item or int(item["expiresAt"]["N"]) > now:
                yield item
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _n(item: dict[str, Any], name: str) -> int:
    value = item.get(name, {}).get("N")
    return int(value) if value is not None else 0


def _s(item: dict[str, Any], name: str) -> str | None:
    value: str | None = item.get(name, {}).get("S")
    return value


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"
