"""`spend` reads what the ledger writes; `mode` flips the switch the ledger checks."""

from __future__ import annotations

import json
import time

import pytest

from ops import mode, spend
from ops.render import usd
from steps.lib.money import ledger

from .conftest import TABLE

DAY = "2027-01-15"
NOW = 1_800_000_000  # inside DAY


def _ceilings(s):
    return ledger.Ceilings(
        s.daily_ceiling_micros, s.monthly_ceiling_micros, s.visitor_ceiling_micros
    )


def _reserve(db, s, request_id, visitor, micros):
    result = ledger.reserve(
        db,
        TABLE,
        request_id=request_id,
        visitor=visitor,
        day=DAY,
        micros=micros,
        ceilings=_ceilings(s),
        now=NOW,
    )
    assert isinstance(result, ledger.Reservation)
    return result


def test_spend_reports_totals_reservations_and_the_costliest_visitors(dynamodb, settings):
    for i, visitor in enumerate(("aaaa1111", "bbbb2222", "cccc3333")):
        for n in range(i + 1):
            ledger.count_message(dynamodb, TABLE, visitor=visitor, day=DAY, limit=20)
            res = _reserve(dynamodb, settings, f"req-{visitor}-{n}", visitor, 10_000)
            if visitor != "aaaa1111":  # aaaa's reservation stays open (in flight / failed)
                ledger.reconcile(dynamodb, TABLE, res, actual_micros=1_000 * (i + 1), now=NOW)
    # A failed S3's request id, voided by the release (it reserved nothing): not "open".
    ledger.release_by_request(dynamodb, TABLE, request_id="req-cut", actual_micros=1, now=NOW)
    report = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    # open 10_000 (aaaa) + settled 2x2_000 (bbbb) + 3x3_000 (cccc)
    assert report["day_micros"] == report["month_micros"] == 10_000 + 4_000 + 9_000
    assert report["day_ceiling_micros"] == settings.daily_ceiling_micros
    assert (report["open_reservations"], report["open_micros"]) == (1, 10_000)
    assert (report["settled_reservations"], report["settled_actual_micros"]) == (5, 13_000)
    assert [v["visitor"] for v in report["top_visitors"]] == ["aaaa1111", "cccc3333", "bbbb2222"]
    assert report["top_visitors"][1] == {"visitor": "cccc3333", "cost_micros": 9_000, "messages": 3}
    json.dumps(report)  # the local admin route returns it as JSON
    text = spend.render(report)
    assert "$0.023" in text and "1 open" in text and "cccc3333" in text


def test_spend_sums_the_ceiling_shards(dynamodb, settings):
    sharded = settings.replace(ceiling_shards=3)
    ceilings = ledger.Ceilings(
        sharded.daily_ceiling_micros, sharded.monthly_ceiling_micros,
        sharded.visitor_ceiling_micros, 3,
    )  # fmt: skip
    shards = set()
    for i in range(12):
        out = ledger.reserve(
            dynamodb, TABLE, request_id=f"s{i}", visitor=f"v{i}", day=DAY, micros=1_000,
            ceilings=ceilings, now=NOW,
        )  # fmt: skip
        shards.add(out.shard)
    assert shards == {0, 1, 2}  # the requests spread over every shard
    report = spend.collect(dynamodb, TABLE, sharded, day=DAY, now=NOW)
    assert report["day_micros"] == report["month_micros"] == 12_000
    assert "3 ceiling shards" in spend.render(report)
    unsharded = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    assert unsharded["day_micros"] == 12_000  # every shard is read, whatever the count now


def test_spend_ignores_other_days_and_expired_items(dynamodb, settings):
    _reserve(dynamodb, settings, "today", "dddd4444", 5_000)
    dynamodb.put_item(
        TableName=TABLE,
        Item={
            **ledger.visitor_key("eeee5555", "2027-01-14"),
            "costMicros": {"N": "999"},
            "msgCount": {"N": "1"},
            "expiresAt": {"N": str(NOW + 10)},
        },
    )
    dynamodb.put_item(
        TableName=TABLE,
        Item={
            **ledger.visitor_key("ffff6666", DAY),
            "costMicros": {"N": "777"},
            "msgCount": {"N": "1"},
            "expiresAt": {"N": str(NOW - 1)},
        },
    )  # expired, not yet swept by TTL
    report = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    assert [v["visitor"] for v in report["top_visitors"]] == ["dddd4444"]
    assert report["open_reservations"] == 1


def test_spend_on_an_empty_table_is_all_zero(dynamodb, settings):
    report = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    assert (report["day_micros"], report["visitors"], report["mode"]) == (0, 0, "normal")
    assert "(none)" in spend.render(report)


@pytest.mark.parametrize("switch", ["degraded", "off"])
def test_mode_switch_refuses_the_next_reservation(dynamodb, settings, switch):
    report = mode.write(dynamodb, TABLE, switch, now=NOW)
    assert report == {"mode": switch, "previous": "normal", "changed": True}
    assert mode.read(dynamodb, TABLE, now=NOW) == switch
    refused = ledger.reserve(
        dynamodb,
        TABLE,
        request_id="next",
        visitor="v1",
        day=DAY,
        micros=1_000,
        ceilings=_ceilings(settings),
        now=NOW,
    )
    assert refused == ledger.Refusal("mode")
    mode.write(dynamodb, TABLE, "normal", now=NOW)
    assert isinstance(_reserve(dynamodb, settings, "after", "v1", 1_000), ledger.Reservation)


def test_an_unknown_mode_is_refused_and_nothing_is_written(dynamodb):
    with pytest.raises(mode.ModeError, match="normal, degraded, off"):
        mode.write(dynamodb, TABLE, "maintenance", now=time.time())
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=ledger.MODE_KEY)


# Red team 2: `spend` summed shards 0 .. N-1 of the CURRENT settings. After N was lowered
# (3 -> 1), what the day and month held on GLOBAL#1 and GLOBAL#2 vanished from the report:
# the operator was told 3,000 of 12,000 micro-USD. It now reads every shard that can exist.
def test_spend_after_the_shard_count_is_lowered_still_reports_every_shard(dynamodb, settings):
    ceilings = ledger.Ceilings(
        settings.daily_ceiling_micros, settings.monthly_ceiling_micros,
        settings.visitor_ceiling_micros, 3,
    )  # fmt: skip
    for i in range(12):
        ledger.reserve(
            dynamodb, TABLE, request_id=f"s{i}", visitor=f"v{i}", day=DAY, micros=1_000,
            ceilings=ceilings, now=NOW,
        )  # fmt: skip
    lowered = settings.replace(ceiling_shards=1)  # redeployed with fewer shards
    report = spend.collect(dynamodb, TABLE, lowered, day=DAY, now=NOW)
    assert report["day_micros"] == report["month_micros"] == 12_000


def test_spend_shows_what_pacing_has_released_by_now(dynamodb, settings):
    # 08:00 UTC, burst share 0.5, flat: 0.5 + 0.5 x 8/24 of the day's ceiling.
    paced = settings.replace(pacing="on", pacing_burst_share="0.5", pacing_curve="")
    report = spend.collect(dynamodb, TABLE, paced, day=DAY, now=NOW)
    ceiling = paced.daily_ceiling_micros
    assert report["paced_released_micros"] == ceiling * 2 // 3
    assert report["paced_at"] == "08:00"
    text = spend.render(report)
    assert f"paced: {usd(ceiling * 2 // 3)} of {usd(ceiling)} released at 08:00 UTC" in text
    unpaced = spend.collect(dynamodb, TABLE, paced.replace(pacing="off"), day=DAY, now=NOW)
    assert unpaced["paced_released_micros"] is None and "paced" not in spend.render(unpaced)
    over = spend.collect(dynamodb, TABLE, paced, day="2027-01-14", now=NOW)  # a past day
    assert over["paced_released_micros"] is None


def test_spend_tells_doctors_own_message_apart_and_still_counts_it(dynamodb, settings):
    """doctor marks its real message's reservation with the operator's credentials
    (ops/doctor/message.py); spend counts it in the totals, since it was billed, and says
    how much of the day was doctor's. An unmarked day says nothing of doctor."""
    from ops.doctor.message import mark_reservation

    visitor = _reserve(dynamodb, settings, "req-visitor", "aaaa1111", 10_000)
    ledger.reconcile(dynamodb, TABLE, visitor, actual_micros=2_000, now=NOW)
    plain = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    assert plain["doctor_reservations"] == 0 and "doctor" not in spend.render(plain)

    probe = _reserve(dynamodb, settings, "req-doctor", "bbbb2222", 10_000)
    ledger.reconcile(dynamodb, TABLE, probe, actual_micros=3_000, now=NOW)
    assert mark_reservation(dynamodb, TABLE, "req-doctor") is not None
    assert mark_reservation(dynamodb, TABLE, "req-never-sent") is None  # creates nothing

    report = spend.collect(dynamodb, TABLE, settings, day=DAY, now=NOW)
    assert report["settled_reservations"] == 2 and report["settled_actual_micros"] == 5_000
    assert (report["doctor_reservations"], report["doctor_micros"]) == (1, 3_000)
    assert "1 of them chatguard doctor's own message ($0.003)" in spend.render(report)
    assert report["day_micros"] == 5_000  # billed like any other message
