"""A bounded loopback load: N visitors send at once, each on its own keep-alive connection.

Shared by the load test (tests/local/test_server_load.py) and `make bench-server`. Every
client is a distinct visitor (its own CloudFront-Viewer-Address, so the server must trust
that header) and sends `each` chat messages in turn on one connection. Bounded in count
(clients x each) and in time (a socket timeout per request, a join deadline for all);
only a 127.0.0.1 URL is accepted.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

QUESTION = json.dumps({"message": "How does the WAF rate-based rule protect the chat?"}).encode()
HEADERS = {"Content-Type": "application/json"}


@dataclass
class LoadResult:
    clients: int
    each: int
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # exception class names
    latencies: list[float] = field(default_factory=list)  # seconds, answered requests only
    seconds: float = 0.0  # wall clock from the start signal to the last answer
    unfinished: int = 0  # clients still running at the deadline

    @property
    def answered(self) -> int:
        return sum(self.statuses.values())

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def visitor(i: int) -> str:
    """A distinct documentation-range viewer address for client i (up to 65,536)."""
    return f"198.51.{100 + i // 256 % 14}.{i % 256}:443" if i < 3584 else f"[2001:db8::{i:x}]:443"


def burst(url: str, clients: int, each: int, *, deadline_seconds: float = 300) -> LoadResult:
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1" or parts.port is None:
        raise ValueError("the load runs against 127.0.0.1 only")
    result = LoadResult(clients, each)
    lock = threading.Lock()
    start = threading.Event()

    def client(i: int) -> None:
        headers = {**HEADERS, "CloudFront-Viewer-Address": visitor(i)}
        connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=120)
        start.wait()
        try:
            for _ in range(each):
                began = time.perf_counter()
                connection.request("POST", "/chat", body=QUESTION, headers=headers)
                response = connection.getresponse()
                response.read()
                took = time.perf_counter() - began
                with lock:
                    result.statuses[response.status] += 1
                    result.latencies.append(took)
        except (OSError, http.client.HTTPException) as exc:
            with lock:
                result.errors[type(exc).__name__] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    start.set()
    stop_at = began + deadline_seconds
    for thread in threads:
        thread.join(max(0.0, stop_at - time.perf_counter()))
    result.seconds = time.perf_counter() - began
    result.unfinished = sum(thread.is_alive() for thread in threads)
    return result
