"""The three rotating secrets (origin header, signing key, visitor salt) from SSM.

Each SSM SecureString holds ``{"current", "previous", "rotated_at"}`` (docs/internals.md);
the ops CLI's rotate command writes the same shape through ``render_secret``. Values are
cached per container for ``secret_cache_seconds`` so a warm step makes no SSM call; a
rotation keeps ``previous`` valid for ``secret_grace_seconds``, longer than the cache.

A cached value never outlives the UTC day it was read on. The visitor salt depends on the
day (``salt_for_day``): a container still holding the value it read before a rotation at
23:58 would otherwise keep hashing tomorrow's visitors with the old salt for up to
``secret_cache_seconds`` while a fresh container uses the new one: two identities, two
quotas, for one visitor. Re-reading at the first request of each day makes every container
derive the same day salt.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .errors import DependencyUnavailable, SettingsError
from .settings import Settings


@dataclass(frozen=True, slots=True)
class SecretValue:
    current: str
    previous: str | None
    rotated_at: int


def parse_secret(text: str) -> SecretValue:
    """Parse the JSON value; anything malformed is a configuration error (fail closed)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        raise SettingsError("secret value is not JSON") from None
    if not isinstance(data, dict):
        raise SettingsError("secret value is not a JSON object")
    current, previous, rotated_at = (
        data.get("current"),
        data.get("previous"),
        data.get("rotated_at"),
    )
    if not isinstance(current, str) or len(current) < 16:
        raise SettingsError("secret 'current' must be a string of at least 16 characters")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise SettingsError("secret 'previous' must be a non-empty string or null")
    if isinstance(rotated_at, bool) or not isinstance(rotated_at, int) or rotated_at < 0:
        raise SettingsError("secret 'rotated_at' must be a Unix timestamp")
    return SecretValue(current, previous, rotated_at)


def render_secret(value: SecretValue) -> str:
    return json.dumps(
        {"current": value.current, "previous": value.previous, "rotated_at": value.rotated_at}
    )


def accepted_values(secret: SecretValue, now: float, grace: int) -> tuple[str, ...]:
    """``current``, plus ``previous`` while the rotation's grace period lasts."""
    if secret.previous and now < secret.rotated_at + grace:
        return (secret.current, secret.previous)
    return (secret.current,)


def salt_for_day(secret: SecretValue, day: str) -> str:
    """``previous`` on (and before) the UTC day of the rotation, ``current`` after it.

    A visitor's hash therefore never changes mid-day: a rotation cannot hand anyone a fresh
    quota, and the new salt starts with the next day's fresh counters anyway.
    """
    rotation_day = _utc_day(secret.rotated_at)
    if secret.previous and day <= rotation_day:
        return secret.previous
    return secret.current


# name -> (monotonic time read, UTC day read, value)
_cache: dict[str, tuple[float, str, SecretValue]] = {}
_lock = threading.Lock()


def get_secret(
    name: str, s: Settings, *, client: Any = None, now: float | None = None
) -> SecretValue:
    """The parsed secret ``name``, from the container cache or one SSM GetParameter.

    ``now`` is the wall clock (Unix seconds; tests pin it): it only decides the UTC day.
    """
    tick = time.monotonic()
    day = _cache_period(time.time() if now is None else now)
    with _lock:
        hit = _cache.get(name)
    if hit and tick - hit[0] < s.secret_cache_seconds and hit[1] == day:
        return hit[2]
    value = parse_secret(_fetch(name, client))
    with _lock:
        _cache[name] = (tick, day, value)
    return value


def _cache_period(now: float) -> str:
    """A cached value is good for one UTC day at most (see the module docstring)."""
    return _utc_day(now)


def _utc_day(now: float) -> str:
    return datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m-%d")


def cache_clear() -> None:
    with _lock:
        _cache.clear()


def _fetch(name: str, client: Any) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    if client is None:
        from . import clients

        client = clients.ssm()
    try:
        response = client.get_parameter(Name=name, WithDecryption=True)
        text: str = response["Parameter"]["Value"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        raise DependencyUnavailable(f"SSM GetParameter {name} failed: {code}") from exc
    except (BotoCoreError, KeyError) as exc:
        raise DependencyUnavailable(
            f"SSM GetParameter {name} failed: {type(exc).__name__}"
        ) from exc
    return text
