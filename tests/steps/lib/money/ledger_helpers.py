"""What the ledger tests share: one day, one instant, a reservation helper, the three
totals, a retry pace on a clock that moves only when the code sleeps, and a race of 64
threads released at once by a barrier."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from steps.lib.money import ledger

DAY, MONTH = "2026-11-29", "2026-11"
NOW = 1_764_400_000.0
BIG = ledger.Ceilings(10**9, 10**9, 10**9)
THREADS = 64

T = TypeVar("T")


class FakePace:
    """A clock that moves only when the code sleeps; a seeded jitter source."""

    def __init__(self, seed: int = 7) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self.draws: list[float] = []
        self._rng = random.Random(seed)

    def draw(self) -> float:
        self.draws.append(self._rng.random())
        return self.draws[-1]

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    @property
    def pace(self) -> ledger.Pace:
        return ledger.Pace(clock=lambda: self.now, sleep=self.sleep, draw=self.draw)


def reserve(aws, request_id, micros=100, ceilings=BIG, visitor="v1", client=None, pace=None):
    return ledger.reserve(
        client or aws.dynamodb,
        aws.table,
        request_id=request_id,
        visitor=visitor,
        day=DAY,
        micros=micros,
        ceilings=ceilings,
        now=NOW,
        pace=pace or ledger.Pace(),
    )


def totals(aws, visitor="v1"):
    return (
        aws.cost("GLOBAL", DAY),
        aws.cost("GLOBAL", f"MONTH#{MONTH}"),
        aws.cost(f"VISITOR#{visitor}", DAY),
    )


def race(work: Callable[[int], T]) -> list[T]:
    """``work(i)`` for i in 0..63, all 64 threads released at once."""
    barrier = threading.Barrier(THREADS)

    def one(i: int) -> Any:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, range(THREADS)))
