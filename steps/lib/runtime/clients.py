"""Per-container AWS clients with explicit timeouts, built once.

They are botocore clients from one botocore session, not boto3's: boto3 only wraps the same
call, and importing it (with s3transfer) cost each cold start about a tenth of its import
CPU for nothing (docs/benchmarks.md, "Cold path").

On Lambda each handler module builds the clients it uses at import, in the INIT phase
(``init_phase.at_init``); elsewhere they are built on first use, once a test or the local
runtime has chosen its endpoint. Handlers always reach a client through this module's
functions, which is the seam tests patch. Converse gets NO retries: a retried model call
can be billed twice, and the reservation covers exactly one call.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .settings import settings


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
    # Two attempts: the quota ADD and the reservation are safe to resend (the reservation
    # carries a ClientRequestToken; a lost-then-resent ADD over-counts, never under-counts).
    return _session().create_client("dynamodb", config=_config(1, 3, 2))


@cache
def ssm() -> Any:
    return _session().create_client("ssm", config=_config(1, 3, 3))


@cache
def bedrock_runtime() -> Any:
    s = settings()
    config = _config(s.bedrock_connect_timeout_seconds, s.bedrock_read_timeout_seconds, 1)
    return _session().create_client("bedrock-runtime", config=config)


@cache
def bedrock_count() -> Any:
    """CountTokens only: short timeouts and no retry, so a slow count falls back to the byte
    bound (metering.py) instead of eating the time Converse needs."""
    return _session().create_client("bedrock-runtime", config=_config(0.5, 1.5, 1))


# The originals, even while a test patches one.
_FACTORIES = (_session, dynamodb, ssm, bedrock_runtime, bedrock_count)


def cache_clear() -> None:
    for factory in _FACTORIES:
        factory.cache_clear()
