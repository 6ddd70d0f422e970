"""Per-container boto3 clients with explicit timeouts, built once.

On Lambda each handler module builds the clients it uses at import, in the INIT phase
(``init_phase.at_init``); elsewhere they are built on first use, once a test or the local
runtime has chosen its endpoint. Handlers always reach a client through this module's
functions, which is the seam tests patch. Converse gets NO retries: a
retried model call can be billed twice, and the reservation covers exactly one call.
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
def dynamodb() -> Any:
    import boto3

    # Two attempts: the quota ADD and the reservation are safe to resend (the reservation
    # carries a ClientRequestToken; a lost-then-resent ADD over-counts, never under-counts).
    return boto3.client("dynamodb", config=_config(1, 3, 2))


@cache
def ssm() -> Any:
    import boto3

    return boto3.client("ssm", config=_config(1, 3, 3))


@cache
def bedrock_runtime() -> Any:
    import boto3

    s = settings()
    config = _config(s.bedrock_connect_timeout_seconds, s.bedrock_read_timeout_seconds, 1)
    return boto3.client("bedrock-runtime", config=config)


_FACTORIES = (dynamodb, ssm, bedrock_runtime)  # the originals, even while a test patches one


def cache_clear() -> None:
    for factory in _FACTORIES:
        factory.cache_clear()
