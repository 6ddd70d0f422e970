"""A tiny JSON-over-HTTP client (urllib only) for `verify` and the `--local` commands."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

USER_AGENT = "chatguard-ops/1"


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: dict[str, Any] | None  # None when the answer was not a JSON object
    headers: Mapping[str, str] = field(default_factory=dict)  # names lower-cased

    @property
    def error(self) -> str:
        return str((self.body or {}).get("error", ""))


def request(
    method: str,
    url: str,
    *,
    payload: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    """Send one request; an HTTP error status is a Reply, a network failure raises OSError."""
    data = raw if raw is not None else None if payload is None else json.dumps(payload).encode()
    sent = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if data is not None:
        sent["Content-Type"] = "application/json"
    sent.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=sent, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return Reply(response.status, _json(response.read()), _headers(response.headers))
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, _json(exc.read()), _headers(exc.headers))


def _headers(message: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in (message or {}).items()}


def _json(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
