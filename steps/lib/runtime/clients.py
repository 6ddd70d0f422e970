"""Per-container AWS clients with explicit timeouts, built once.

They are botocore clients from one botocore session, not boto3's: boto3 only wraps the same
call, and importing it (with s3transfer) cost each cold start about a tenth of its import
CPU for nothing (docs/benchmarks.md, "Cold path").

On Lambda each handler module builds the clients it uses at import, in the INIT phase
(``init_phase.at_init``); elsewhere they are built on first use, once a test or the local
runtime has chosen its endpoint. Handlers always reach a client through this module's
functions, which is the seam tests patch. No billed call is retried: a retried model call
can be billed twice, and the reservation covers exactly one call.

Each billed call (Titan's embedding, ApplyGuardrail, Converse) and CountTokens has its own
client and timeouts, named here, because the run's time budget is spent call by call: a
step sends a billed call only when its worst case (``Timeouts.worst``) still ends inside
the budget (money/billed_calls.py), and tests/infra/test_timeout_order.py adds the same
figures up against the deployed workflow's timeout. The gate steps' DynamoDB and SSM
clients are named too: each gives up before the Lambda timeout of every step that calls it
(tests/infra/test_client_timeouts.py), and S5's signing-key read is on every chain
infra/worst_chains.py adds up.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from .settings import Settings, settings


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    read: float
    attempts: int = 1  # no retry: a resent billed call can be billed twice

    @property
    def worst(self) -> float:
        """The longest a call can take before the client gives up (seconds)."""
        return self.attempts * (self.connect + self.read)


# ApplyGuardrail answers in well under a second; Titan's query embedding likewise. A short
# read timeout keeps each from eating the time Converse needs, and the embedding's worst
# stays under S4's 2-second Lambda timeout (a slow Titan is NotSent or an error, released).
GUARDRAIL = Timeouts(connect=1, read=2)
EMBEDDING = Timeouts(connect=0.5, read=1)
COUNT = Timeouts(connect=0.5, read=1.5)  # free, and the byte bound stands in on a timeout


# The gate steps' dependencies, each giving up before the Lambda timeout of every step that
# calls it (steps/lib/runtime/stages.py; tests/infra/test_client_timeouts.py), so a slow
# table or parameter is a handled error that fails closed, not a Lambda timeout. Both answer
# a request inside a Region in milliseconds. One attempt each: the SDK's own retry would
# sleep up to 1 s before its second attempt (standard mode,
# https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), which no
# timeout here bounds (tests/infra/test_client_retry_waits.py measures it on the real
# client). The ledger retries throttling and transaction conflicts itself, within a budget
# measured from its first attempt (money/ledger.py: the quota ADD, the reservation, the
# settlement), so every gate step's calls in sequence still end inside its timeout. SSM:
# each secret is read once per container per 5 minutes. Each bound holds when AWS answers
# in one burst: botocore's read timeout limits each read of the socket, not the whole call
# (a reply trickled byte by byte is cut by the Lambda timeout instead, and still fails
# closed through the Catch).
DYNAMODB = Timeouts(connect=0.25, read=0.5)
SSM = Timeouts(connect=0.25, read=0.5)


def converse_timeouts(s: Settings) -> Timeouts:
    return Timeouts(s.bedrock_connect_timeout_seconds, s.bedrock_read_timeout_seconds)


def _client(service: str, timeouts: Timeouts) -> Any:
    config = _config(timeouts.connect, timeouts.read, timeouts.attempts)
    return _session().create_client(service, config=config)


def _config(connect: float, read: float, attempts: int) -> Any:
    from botocore.config import Config

    return Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"total_max_attempts": attempts, "mode": "standard"},
    )


@cache
def _session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@cache
def dynamodb() -> Any:
    return _client("dynamodb", DYNAMODB)


@cache
def ssm() -> Any:
    return _client("ssm", SSM)


@cache
def bedrock_runtime() -> Any:
    """Converse only (timeouts from the settings)."""
    return _client("bedrock-runtime", converse_timeouts(settings()))


@cache
def bedrock_guard() -> Any:
    """ApplyGuardrail only."""
    return _client("bedrock-runtime", GUARDRAIL)


@cache
def bedrock_embed() -> Any:
    """Titan's query embedding (S4) only."""
    return _client("bedrock-runtime", EMBEDDING)


@cache
def bedrock_count() -> Any:
    """CountTokens only: short timeouts and no retry, so a slow count falls back to the byte
    bound (metering.py) instead of eating the time Converse needs."""
    return _client("bedrock-runtime", COUNT)


# The originals, even while a test patches one.
_FACTORIES = (_session, dynamodb, ssm, bedrock_runtime, bedrock_guard, bedrock_embed, bedrock_count)


def cache_clear() -> None:
    for factory in _FACTORIES:
        factory.cache_clear()
