"""The ledger's guarantees: atomic quota, all-or-nothing reservations that never let a
total pass its ceiling (even under 64 concurrent callers), idempotent settlement."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from steps.lib.money import ledger
from steps.lib.runtime.errors import DependencyUnavailable, ReconcileError
from tests.steps.conftest import Serialised

from .ledger_helpers import BIG, DAY, MONTH, NOW, FakePace, race, reserve, totals


def test_keys_match_the_design():
    assert ledger.day_key(DAY) == {"pk": {"S": "GLOBAL"}, "sk": {"S": DAY}}
    assert ledger.month_key(MONTH) == {"pk": {"S": "GLOBAL"}, "sk": {"S": "MONTH#2026-11"}}
    assert ledger.visitor_key("ab", DAY) == {"pk": {"S": "VISITOR#ab"}, "sk": {"S": DAY}}
    assert ledger.reservation_key("r") == {"pk": {"S": "RES#r"}, "sk": {"S": "RES"}}
    assert ledger.MODE_KEY == {"pk": {"S": "CONFIG"}, "sk": {"S": "MODE"}}


def test_count_message_refuses_past_the_limit_and_sets_expiry(aws):
    results = [
        ledger.count_message(aws.dynamodb, aws.table, visitor="v", day=DAY, limit=2)
        for _ in range(3)
    ]
    assert [r.allowed for r in results] == [True, True, False]
    item = aws.item("VISITOR#v", DAY)
    assert item["msgCount"]["N"] == "2"
    assert int(item["expiresAt"]["N"]) == ledger.day_expiry(DAY)


def test_a_new_day_is_a_new_item_at_zero(aws):
    for _ in range(2):
        ledger.count_message(aws.dynamodb, aws.table, visitor="v", day=DAY, limit=2)
    nxt = ledger.count_message(aws.dynamodb, aws.table, visitor="v", day="2026-11-30", limit=2)
    assert nxt.allowed and nxt.count == 1


def test_reserve_moves_day_month_and_visitor_together_and_records_the_reservation(aws):
    out = reserve(aws, "r1", 250)
    assert out == ledger.Reservation("r1", 250, DAY, MONTH, "v1")
    assert totals(aws) == (250, 250, 250)
    res = aws.item("RES#r1", "RES")
    assert res["status"]["S"] == "open" and res["reservedMicros"]["N"] == "250"
    assert (res["day"]["S"], res["month"]["S"], res["visitor"]["S"]) == (DAY, MONTH, "v1")
    assert int(res["expiresAt"]["N"]) == int(NOW) + 2 * 86_400


@pytest.mark.parametrize("which", ["day", "month", "visitor"])
def test_any_one_ceiling_refuses_the_whole_reservation(aws, which):
    ceilings = ledger.Ceilings(**({"day": 1000, "month": 1000, "visitor": 1000} | {which: 250}))
    assert isinstance(reserve(aws, "a", 200, ceilings), ledger.Reservation)
    assert reserve(aws, "b", 200, ceilings) == ledger.Refusal("ceiling")
    assert totals(aws) == (200, 200, 200)  # nothing moved
    assert aws.item("RES#b", "RES") is None


def test_the_ceiling_is_inclusive(aws):
    ceilings = ledger.Ceilings(300, 300, 300)
    assert isinstance(reserve(aws, "a", 150, ceilings), ledger.Reservation)
    assert isinstance(reserve(aws, "b", 150, ceilings), ledger.Reservation)
    assert reserve(aws, "c", 1, ceilings) == ledger.Refusal("ceiling")
    assert totals(aws) == (300, 300, 300)


def test_a_reserve_larger_than_a_ceiling_is_refused_even_on_a_fresh_day(aws):
    # attribute_not_exists(costMicros) would pass on a new item: the bound is checked first.
    assert reserve(aws, "a", 500, ledger.Ceilings(400, 10**6, 10**6)) == ledger.Refusal("ceiling")
    assert aws.count_items() == 0


def test_a_second_reservation_for_one_request_id_is_refused_not_charged(aws):
    reserve(aws, "same", 100)
    with pytest.raises(Exception, match="already exists"):
        reserve(aws, "same", 100)
    assert totals(aws) == (100, 100, 100)


def test_operator_mode_refuses_inside_the_transaction(aws):
    aws.set_mode("degraded")
    assert reserve(aws, "a") == ledger.Refusal("mode")
    assert ledger.read_mode(aws.dynamodb, aws.table, now=NOW) == "degraded"
    assert totals(aws) == (0, 0, 0)


@pytest.mark.parametrize(
    ("stored", "read"), [(None, "normal"), ("off", "off"), ("Normal!", "degraded")]
)
def test_read_mode(aws, stored, read):
    if stored:
        aws.set_mode(stored)
    assert ledger.read_mode(aws.dynamodb, aws.table, now=NOW) == read


def test_reads_ignore_expired_items(aws):
    item = {
        "pk": {"S": "GLOBAL"},
        "sk": {"S": DAY},
        "costMicros": {"N": "5"},
        "expiresAt": {"N": "10"},
    }
    aws.dynamodb.put_item(TableName=aws.table, Item=item)
    assert ledger.read_cost(aws.dynamodb, aws.table, ledger.day_key(DAY), now=11) == 0
    assert ledger.read_cost(aws.dynamodb, aws.table, ledger.day_key(DAY), now=9) == 5


# Settlement -------------------------------------------------------------------------------


def test_reconcile_moves_totals_down_to_the_actual_cost_exactly_once(aws):
    r = reserve(aws, "r1", 1000)
    first = ledger.reconcile(aws.dynamodb, aws.table, r, actual_micros=300, now=NOW)
    assert first == ledger.Settlement("settled", 300, 700)
    assert totals(aws) == (300, 300, 300)
    for _ in range(3):
        again = ledger.reconcile(aws.dynamodb, aws.table, r, actual_micros=300, now=NOW)
        assert again.status == "already_settled"
    assert totals(aws) == (300, 300, 300)
    assert aws.item("RES#r1", "RES")["status"]["S"] == "settled"


def test_a_cost_above_the_reserve_is_recorded_never_under_counted(aws):
    r = reserve(aws, "r1", 1000)
    ledger.reconcile(aws.dynamodb, aws.table, r, actual_micros=1200, now=NOW)
    assert totals(aws) == (1200, 1200, 1200)


def test_reconcile_refuses_a_tampered_reserved_amount(aws):
    r = reserve(aws, "r1", 1000)
    forged = ledger.Reservation("r1", 5000, DAY, MONTH, "v1")
    with pytest.raises(ReconcileError):
        ledger.reconcile(aws.dynamodb, aws.table, forged, actual_micros=0, now=NOW)
    assert totals(aws) == (1000, 1000, 1000)
    assert (
        ledger.reconcile(aws.dynamodb, aws.table, r, actual_micros=0, now=NOW).status == "settled"
    )


# Concurrency ------------------------------------------------------------------------------

RESERVE = 1000
CEILING = ledger.Ceilings(day=10_500, month=10**6, visitor=10**6)  # room for 10, not 11


def test_64_concurrent_reservations_never_pass_the_ceiling(aws):
    client = Serialised(aws.dynamodb)
    outcomes = race(lambda i: reserve(aws, f"r{i}", RESERVE, CEILING, client=client))
    admitted = [o for o in outcomes if isinstance(o, ledger.Reservation)]
    assert len(admitted) == 10
    assert all(o == ledger.Refusal("ceiling") for o in outcomes if o not in admitted)
    assert aws.cost("GLOBAL", DAY) == 10 * RESERVE <= CEILING.day


def check_then_add(aws, client, request_id):
    """The naive gate the hard cap rules out: read the total, compare, then add."""
    total = ledger.read_cost(client, aws.table, ledger.day_key(DAY), now=NOW)
    if total + RESERVE > CEILING.day:
        return ledger.Refusal("ceiling")
    client.update_item(
        TableName=aws.table,
        Key=ledger.day_key(DAY),
        UpdateExpression="ADD costMicros :r",
        ExpressionAttributeValues={":r": {"N": str(RESERVE)}},
    )
    return "admitted"


def test_the_same_harness_shows_check_then_add_overshooting(aws):
    client = Serialised(aws.dynamodb)
    outcomes = race(lambda i: check_then_add(aws, client, f"r{i}"))
    spent = aws.cost("GLOBAL", DAY)
    assert outcomes.count("admitted") > 10
    assert spent > CEILING.day  # the invariant the reservation keeps is broken here


def test_64_concurrent_messages_with_settlement_never_pass_the_ceiling(aws):
    client = Serialised(aws.dynamodb)

    def message(i):
        out = reserve(aws, f"r{i}", RESERVE, CEILING, client=client)
        if isinstance(out, ledger.Reservation):
            ledger.reconcile(client, aws.table, out, actual_micros=RESERVE // 4, now=NOW)
        return out

    outcomes = race(message)
    admitted = sum(isinstance(o, ledger.Reservation) for o in outcomes)
    assert admitted >= 10
    assert aws.cost("GLOBAL", DAY) == admitted * (RESERVE // 4) <= CEILING.day


# Faults -----------------------------------------------------------------------------------


class Failing:
    def __init__(self, code: str) -> None:
        self.code = code
        self.calls = 0

    def __getattr__(self, name):
        def call(**kwargs):
            self.calls += 1
            raise ClientError({"Error": {"Code": self.code, "Message": "injected"}}, name)

        return call


@pytest.mark.parametrize(
    "code",
    [
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "ResourceNotFoundException",
        "InternalServerError",
        "AccessDeniedException",
    ],
)
def test_dynamodb_failures_become_dependency_unavailable(aws, code):
    client = Failing(code)
    quota = FakePace()  # a throttled ADD wrote nothing: tried again within its budget
    with pytest.raises(DependencyUnavailable, match=code) as info:
        ledger.count_message(client, aws.table, visitor="v", day=DAY, limit=5, pace=quota.pace)
    assert isinstance(info.value.__cause__, ClientError)
    throttled = code in ledger.THROTTLE_CODES
    assert (client.calls > 1) is throttled and (len(quota.sleeps) > 0) is throttled
    assert sum(quota.sleeps) <= ledger.QUOTA_BACKOFF.budget_seconds
    with pytest.raises(DependencyUnavailable):
        ledger.read_mode(client, aws.table, now=NOW)
    if code in ledger.THROTTLE_CODES:
        # The reservation retries throttling, then answers degraded (tests/steps/
        # test_ledger_retries.py); every other failure is an outage: fail closed.
        # A clock that moves only when the retry loop sleeps, and seeded jitter: the number
        # of attempts inside the budget is the same on any machine under any load.
        fake, calls_before = FakePace(), client.calls
        assert reserve(aws, "r", client=client, pace=fake.pace) == ledger.Refusal("contention")
        assert client.calls - calls_before > 3
        assert sum(fake.sleeps) <= ledger.RESERVATION_BACKOFF.budget_seconds
    else:
        with pytest.raises(DependencyUnavailable):
            reserve(aws, "r", client=client)


def test_an_unreachable_endpoint_is_dependency_unavailable(aws):
    import boto3
    from botocore.config import Config

    dead = boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        config=Config(connect_timeout=0.2, read_timeout=0.2, retries={"total_max_attempts": 1}),
    )
    with pytest.raises(DependencyUnavailable, match="EndpointConnectionError"):
        ledger.count_message(dead, aws.table, visitor="v", day=DAY, limit=5)


def test_a_transaction_cancelled_for_another_reason_fails_closed(aws):
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("dynamodb")
    with Stubber(client) as stub:
        stub.add_client_error(
            "transact_write_items",
            "TransactionCanceledException",
            "cancelled",
            response_meta={},
            modeled_fields={
                "CancellationReasons": [{"Code": "ValidationError"}] + [{"Code": "None"}] * 4
            },
        )
        with pytest.raises(DependencyUnavailable, match="ValidationError"):
            reserve(aws, "r", client=client)
    assert aws.count_items() == 0


def test_a_transaction_conflict_is_tried_again(aws):
    import boto3
    from botocore.stub import ANY, Stubber

    client = boto3.client("dynamodb")
    with Stubber(client) as stub:
        stub.add_client_error(
            "transact_write_items",
            "TransactionCanceledException",
            "conflict",
            modeled_fields={
                "CancellationReasons": [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * 4
            },
        )
        stub.add_response(
            "transact_write_items", {}, {"TransactItems": ANY, "ClientRequestToken": ANY}
        )
        assert isinstance(reserve(aws, "r", client=client), ledger.Reservation)
        stub.assert_no_pending_responses()


def _key_of(item):
    (request,) = item.values()
    return request.get("Key") or {k: request["Item"][k] for k in ("pk", "sk")}


def test_the_item_names_follow_each_transaction_s_order():
    """Cancellation reasons are read by these names, so each name must sit at its item."""
    from steps.lib.money import ledger_items

    reservation = ledger.Reservation("r1", 100, DAY, MONTH, "v1", shard=0)
    written = {
        "day": ledger.day_key(DAY), "month": ledger.month_key(MONTH),
        "visitor": ledger.visitor_key("v1", DAY), "reservation": ledger.reservation_key("r1"),
        "mode": ledger.MODE_KEY,
    }  # fmt: skip
    reserving = ledger_items.reservation_items("t", "r1", "v1", DAY, 100, BIG, NOW)
    settling = ledger_items.settlement_items("t", reservation, 50, NOW)
    assert [_key_of(i) for i in reserving] == [written[n] for n in ledger_items.RESERVATION_ITEMS]
    assert [_key_of(i) for i in settling] == [written[n] for n in ledger_items.SETTLEMENT_ITEMS]
