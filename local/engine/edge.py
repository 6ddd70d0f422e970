"""What CloudFront, WAF and API Gateway do before an execution starts, as pure functions.

The local server (local/server/uvicorn_server.py) plays the edge with these: a per-IP rate
rule like the WAF rule E1, the body-size limit, and API Gateway's request validation
(invalid JSON or a body that breaks the contract is a 400 before any execution, so it never
writes to the ledger and never reaches a model).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from steps.lib.request.contract import validate_request
from steps.lib.request.edge_blocks import BLOCK_STATUS, SIZE_BLOCKED
from steps.lib.runtime.errors import BadRequest
from steps.lib.runtime.settings import Settings

MAX_TRACKED_ADDRESSES = 50_000


class EdgeRefusal(Exception):
    """The edge answers by itself: `status` with `payload` (``{"error": message}``, plus
    ``blocked`` when it plays a WAF block: the same JSON the web ACL answers)."""

    def __init__(self, status: int, message: str, blocked: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.payload: dict[str, str] = {"error": message}
        if blocked:
            self.payload["blocked"] = blocked

    @classmethod
    def waf(cls, block: dict[str, str]) -> EdgeRefusal:
        return cls(BLOCK_STATUS, block["error"], block["blocked"])


class RateRule:
    """At most `limit` requests per `window_seconds` per address (sliding window).

    WAF counts approximately over 60-600 s windows; an exact sliding window is stricter,
    which is the safe side for a local stand-in.
    """

    def __init__(
        self, limit: int, window_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit < 1 or window_seconds <= 0:
            raise ValueError("rate limit and window must be positive")
        self.limit, self.window = limit, window_seconds
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, address: str) -> bool:
        now = self._clock()
        with self._lock:
            if len(self._seen) > MAX_TRACKED_ADDRESSES:
                self._forget_idle(now)
            stamps = self._seen.setdefault(address, deque())
            while stamps and stamps[0] <= now - self.window:
                stamps.popleft()
            if len(stamps) >= self.limit:
                return False
            stamps.append(now)
            return True

    def forget(self, address: str) -> bool:
        """Drop an address's count (the operator releasing itself after `verify`'s burst)."""
        with self._lock:
            return self._seen.pop(address, None) is not None

    def _forget_idle(self, now: float) -> None:
        idle = [a for a, s in self._seen.items() if not s or s[-1] <= now - self.window]
        for address in idle:
            del self._seen[address]


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_body(raw: bytes, settings: Settings) -> dict[str, Any]:
    """The validated request, or EdgeRefusal(400) saying what is wrong with it; a body over
    the byte limit is the WAF size block (403) instead."""
    if len(raw) > settings.body_max_bytes:
        raise EdgeRefusal.waf(SIZE_BLOCKED)
    if not raw.strip():
        raise EdgeRefusal(400, "request body is required (a JSON object with a message)")
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise EdgeRefusal(400, "request body is not UTF-8 text") from None
    except RecursionError:
        raise EdgeRefusal(400, "request body is nested too deeply") from None
    except ValueError as exc:
        raise EdgeRefusal(400, f"request body is not valid JSON: {exc}") from None
    try:
        validate_request(body, settings)
    except BadRequest as exc:
        raise EdgeRefusal(400, str(exc)) from None
    except RecursionError:
        raise EdgeRefusal(400, "request body is nested too deeply") from None
    result: dict[str, Any] = body
    return result


def address_key(viewer_address: str) -> str:
    """The rate rule's key: the address without its port (bounded, never logged)."""
    value = viewer_address.strip()[:64]
    if value.startswith("[") and "]" in value:
        return value[1 : value.index("]")]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def socket_address(host: str, port: int) -> str:
    """A socket peer in CloudFront-Viewer-Address form: ``ip:port`` or ``[v6]:port``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
