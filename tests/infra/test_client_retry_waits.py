"""The gate clients' worst, measured on the real botocore client: its retry waits count too.

runtime/clients.py's ``Timeouts.worst`` is attempts x (connect + read), and
test_client_timeouts.py checks each client alone against its step's Lambda timeout. The
SDK also sleeps between attempts: in standard retry mode a throttled first attempt (a hot
item's ProvisionedThroughputExceeded, a transaction's TransactionInProgress) waits up to
1 s x 2^i before the next ([SDK retry behavior]). And S2 calls two clients one after the
other when cold (the salt from SSM, then the ADD). Measured here on the client the
handlers build, with the jitter at its largest and the sleep recorded, not slept.

[SDK retry behavior]: https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import botocore.endpoint
import botocore.retries.standard as standard
import pytest
from botocore.awsrequest import AWSResponse

from steps.lib.money import ledger
from steps.lib.runtime import clients
from steps.lib.runtime.stages import BY_STATE

pytestmark = pytest.mark.infra

# Each gate step's clients in the order its handler calls them on a cold message, each at
# most once on the path that reaches the model (steps/quota.py, steps/cost_gate.py).
SEQUENCES = {
    "OriginVerify": ("ssm",),
    "Quota": ("ssm", "dynamodb"),
    "CostGate": ("dynamodb",),
}
THROTTLED = {"dynamodb": "ProvisionedThroughputExceededException", "ssm": "ThrottlingException"}
TIMEOUTS = {"dynamodb": clients.DYNAMODB, "ssm": clients.SSM}


class _Empty:
    def stream(self, **_: object) -> Iterator[bytes]:
        yield b""


@pytest.fixture
def sdk_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The SDK's sleeps between attempts, recorded instead of slept, jitter at its top."""
    waits: list[float] = []
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    top = functools.partial(standard.ExponentialBackoff, random=lambda: 1.0)
    monkeypatch.setattr(standard, "ExponentialBackoff", top)
    monkeypatch.setattr(botocore.endpoint.time, "sleep", waits.append)
    return waits


def measured_worst(service: str, waits: list[float]) -> float:
    """Every attempt at its connect + read timeout, plus the waits the SDK slept between
    them, when each attempt is throttled (the client as runtime/clients.py builds it)."""
    timeouts, code, sent = TIMEOUTS[service], THROTTLED[service], []
    client = clients._client(service, timeouts)

    def throttled(request, **_: object) -> AWSResponse:
        sent.append(request)
        response = AWSResponse(request.url, 400, {"x-amzn-ErrorType": code}, _Empty())
        response._content = f'{{"__type":"{code}","message":"Rate exceeded"}}'.encode()
        return response

    client.meta.events.register("before-send", throttled)
    waits.clear()
    with pytest.raises(client.exceptions.ClientError, match=code):
        if service == "dynamodb":
            client.get_item(TableName="t", Key={"pk": {"S": "p"}})
        else:
            client.get_parameter(Name="p")
    assert len(sent) == timeouts.attempts  # the client made the attempts it is named for
    return len(sent) * (timeouts.connect + timeouts.read) + sum(waits)


def test_a_throttled_table_costs_one_attempt_and_no_sdk_wait(sdk_waits):
    assert measured_worst("dynamodb", sdk_waits) == pytest.approx(clients.DYNAMODB.worst)
    assert sdk_waits == []


def test_naive_two_sdk_attempts_wait_a_second_no_timeout_bounds(sdk_waits, monkeypatch):
    # The client as it was: two attempts in standard mode. Its figure said 1.5 s; the SDK
    # sleeps 1 s between the attempts, so a throttled table takes 2.5 s, past S3's 2 s.
    monkeypatch.setitem(TIMEOUTS, "dynamodb", clients.Timeouts(0.25, 0.5, attempts=2))
    assert measured_worst("dynamodb", sdk_waits) == pytest.approx(2.5)
    assert sdk_waits == [1.0]


def test_ssm_makes_one_attempt_and_no_wait(sdk_waits):
    assert measured_worst("ssm", sdk_waits) == pytest.approx(clients.SSM.worst)
    assert sdk_waits == []


# The ledger's own retries (money/ledger.py) before each step's last DynamoDB attempt: the
# budget bounds the time from the first attempt to the start of the last one.
LEDGER_BUDGET = {
    "OriginVerify": 0.0,
    "Quota": ledger.QUOTA_BACKOFF.budget_seconds,
    "CostGate": ledger.RESERVATION_BACKOFF.budget_seconds,
}


def test_each_gate_steps_clients_in_sequence_give_up_before_its_lambda_timeout(sdk_waits):
    late = []
    for state, sequence in SEQUENCES.items():
        calls = sum(measured_worst(service, sdk_waits) for service in sequence)
        worst = LEDGER_BUDGET[state] + calls
        if worst >= BY_STATE[state].timeout_seconds:
            late.append(f"{state}: {' then '.join(sequence)} {worst:g} s")
    assert not late, late
