"""`make bench-flood`: a discrete-event simulation of the ledger's day item under a flood.

Plain Python, seeded, no AWS: a model, not a measurement. What it models (docs/scaling.md
explains each figure and its source):

- Every answered message runs two transactions on the day's partition: the reservation
  (S3) and the settlement (S6). Each writes the day and the month item (both ``pk=GLOBAL``,
  one partition) at 2 write units each: 4 units per transaction, 8 per message.
- The partition accepts ``PARTITION_WCU`` write units per second (a token bucket one second
  deep); a transaction that finds too few tokens is throttled and writes nothing.
- A transaction holds its items for ``TX_SECONDS``; another transaction touching them
  meanwhile fails with TransactionConflict and writes nothing.
- A reservation whose condition fails (the day is spent) still consumes its write units.
- Between reservation and settlement the model answers in ``MODEL_SECONDS``.

Each variant is a ``Policy``: how the reservation and the settlement retry, what S3 answers
when its retries run out, ``memo_seconds`` (a container remembers a refused shard,
steps/lib/money/spent_memo.py) and ``shards`` (N day/month item pairs of ceiling/N each, on N
partitions). ``AS_BUILT`` takes its figures from the ledger's own constants
(``ledger.RESERVATION_BACKOFF``, ``ledger.SETTLE_BACKOFF``, ``spent_memo.DEFAULT_SECONDS``), so
the model follows the code. ``naive_check_then_add`` is the unsafe reference
(read the total, then add without a condition) that shows the overshoot check can fail.
"""

from __future__ import annotations

import heapq
import math
import os
import platform
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from steps.lib.money import ledger, pacing, pricing, spent_memo
from steps.lib.runtime.settings import Settings, cdk_context
from tests.bench import report

SCALING = report.DOC.with_name("scaling.md")
PARTITION_WCU = 1000  # per partition per second (DynamoDB partition limit)
WCU_PER_TX = 4  # day + month item, 2 units each inside a transaction
WCU_PER_MESSAGE = 2 * WCU_PER_TX
DAY_ITEM_CAPACITY = PARTITION_WCU / WCU_PER_MESSAGE  # answered messages per second: 125
TX_SECONDS = 0.010  # how long a transaction holds its items (assumption: one in-Region call)
MODEL_SECONDS = 2.5  # reservation -> settlement (S4 + S5; assumption, as in bench-cold)
S3_SECONDS = 0.03  # one S3 invocation, to size how many containers share the load
ARRIVAL_SECONDS = float(os.environ.get("BENCH_FLOOD_SECONDS", "20"))
# Multiples of DAY_ITEM_CAPACITY reaching S3: the shipped stage throttle's rate, 10x, 100x.
SHIPPED_THROTTLE = cdk_context()["chatguard/edge"]["api_throttle_rate"] / DAY_ITEM_CAPACITY
FLOODS = (SHIPPED_THROTTLE, 10.0, 100.0)
ACTUAL_MICROS = 3751  # a typical answer: 2,500 input and 250 output tokens, 20 embedded


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    reserve_attempts: int = 4
    reserve_wait: str = "linear"  # "linear": uniform(5, 20 ms) x attempt (as shipped today)
    reserve_retries_throttling: bool = False
    reserve_budget_s: float = math.inf
    exhausted: str = "503"  # what S3 answers when its retries run out: "503" or "degraded"
    settle_attempts: int = 1  # today S6 does not retry a conflict at all
    settle_budget_s: float = math.inf
    memo_seconds: float = 0.0  # item 4: 0 = off
    shards: int = 1  # item 5: 1 = one day/month pair
    naive_check_then_add: bool = False


AS_SHIPPED = Policy("as shipped")
RETRY_THEN_DEGRADE = Policy(
    "retry, then degrade", reserve_attempts=ledger.RESERVATION_BACKOFF.max_attempts,
    reserve_wait="jitter", reserve_retries_throttling=True,
    reserve_budget_s=ledger.RESERVATION_BACKOFF.budget_seconds, exhausted="degraded",
    settle_attempts=ledger.SETTLE_BACKOFF.max_attempts,
    settle_budget_s=ledger.SETTLE_BACKOFF.budget_seconds,
)  # fmt: skip
MEMO_SECONDS = spent_memo.DEFAULT_SECONDS
NAIVE = Policy("naive check-then-add (unsafe reference)", naive_check_then_add=True)


def wait_before(policy_wait: str, attempt: int, rng: random.Random) -> float:
    """The pause before retry number ``attempt`` (1 = the first retry)."""
    if policy_wait == "linear":
        return rng.uniform(0.005, 0.02) * attempt
    return ledger.RESERVATION_BACKOFF.wait(attempt, rng.random())  # the ledger's full jitter


@dataclass
class Partition:
    """One partition holding a day item and a month item, with its own capacity and lock."""

    ceiling: int
    total: int = 0  # what the ledger holds: reserved + settled
    peak: int = 0  # the most it ever held (must never pass the ceiling)
    tokens: float = PARTITION_WCU
    refilled_at: float = 0.0
    busy_until: float = 0.0

    def take(self, now: float, units: int) -> bool:
        self.tokens = min(PARTITION_WCU, self.tokens + (now - self.refilled_at) * PARTITION_WCU)
        self.refilled_at = now
        if self.tokens < units:
            return False
        self.tokens -= units
        return True


@dataclass
class Outcome:
    counts: Counter[str] = field(default_factory=Counter)
    spent: int = 0  # what the answered messages really cost (the bill)
    lost_settles: int = 0
    stranded: int = 0  # reserved minus actual left on the day by lost settlements
    writes: int = 0  # transactions that consumed write units
    requests: int = 0


class Simulation:
    def __init__(
        self, policy: Policy, rate: float, ceiling: int, reserve: int, seed: int, tx: float
    ) -> None:
        if policy.shards < 1:
            raise ValueError("shards must be >= 1")
        self.policy, self.rate, self.reserve, self.tx = policy, rate, reserve, tx
        self.rng = random.Random(seed)
        self.partitions = [Partition(ceiling // policy.shards) for _ in range(policy.shards)]
        self.containers = max(1, math.ceil(rate * S3_SECONDS))
        # per container, per shard: until when a refusal is remembered
        self.memo_until = [[0.0] * policy.shards for _ in range(self.containers)]
        self.events: list[tuple[float, int, Callable[[float], None]]] = []
        self.seq = 0
        self.out = Outcome()

    def at(self, when: float, action: Callable[[float], None]) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, self.seq, action))

    def run(self) -> Outcome:
        now = 0.0
        while True:
            now += self.rng.expovariate(self.rate)
            if now > ARRIVAL_SECONDS:
                break
            self.at(now, self.arrive)
        while self.events:
            when, _, action = heapq.heappop(self.events)
            action(when)
        return self.out

    # S3 -------------------------------------------------------------------------------

    def arrive(self, now: float) -> None:
        self.out.requests += 1
        container = self.rng.randrange(self.containers)
        order = self.rng.sample(range(len(self.partitions)), len(self.partitions))
        if self.policy.memo_seconds:
            order = [k for k in order if now >= self.memo_until[container][k]]
            if not order:
                self.out.counts["degraded (memo, no write)"] += 1
                return
        self.reserve_on(now, now, 1, container, order)

    def reserve_on(
        self, now: float, started: float, attempt: int, container: int, order: list[int]
    ) -> None:
        part = self.partitions[order[0]]
        if self.policy.naive_check_then_add:
            seen = part.total  # read now, add later: the gap lets others slip in
            if seen + self.reserve > part.ceiling:
                self.out.counts["degraded"] += 1
                return
            self.at(now + self.tx, lambda t: self.naive_add(t, part))
            return
        if now < part.busy_until:
            return self.reserve_failed(now, started, attempt, container, order, "conflict")
        if not part.take(now, WCU_PER_TX):
            return self.reserve_failed(now, started, attempt, container, order, "throttled")
        part.busy_until = now + self.tx
        self.out.writes += 1
        if part.total + self.reserve > part.ceiling:  # the condition fails, units still spent
            if self.policy.memo_seconds:
                self.memo_until[container][order[0]] = now + self.policy.memo_seconds
            if len(order) > 1:  # another shard may still have room: try it next
                rest = order[1:]
                self.at(now + self.tx, lambda t: self.reserve_on(t, started, 1, container, rest))
                return
            self.out.counts["degraded"] += 1
            return
        part.total += self.reserve
        part.peak = max(part.peak, part.total)
        self.answer(now, part)

    def naive_add(self, now: float, part: Partition) -> None:
        part.total += self.reserve
        part.peak = max(part.peak, part.total)
        self.answer(now, part)

    def answer(self, now: float, part: Partition) -> None:
        self.out.counts["answered"] += 1
        self.out.spent += ACTUAL_MICROS
        done = now + self.tx + MODEL_SECONDS
        self.at(done, lambda t: self.settle(t, t, 1, part))

    def reserve_failed(
        self, now: float, started: float, attempt: int, container: int, order: list[int],
        why: str,
    ) -> None:  # fmt: skip
        p = self.policy
        retryable = why == "conflict" or p.reserve_retries_throttling
        wait = wait_before(p.reserve_wait, attempt, self.rng)
        if (
            retryable
            and attempt < p.reserve_attempts
            and now + wait - started <= p.reserve_budget_s
        ):
            self.at(
                now + wait, lambda t: self.reserve_on(t, started, attempt + 1, container, order)
            )
            return
        if p.exhausted == "degraded":
            self.out.counts[f"degraded after {why}"] += 1
        else:
            self.out.counts[f"503 ({why})"] += 1

    # S6 -------------------------------------------------------------------------------

    def settle(self, now: float, started: float, attempt: int, part: Partition) -> None:
        if self.policy.naive_check_then_add:
            part.total += ACTUAL_MICROS - self.reserve
            return
        problem = None
        if now < part.busy_until:
            problem = "conflict"
        elif not part.take(now, WCU_PER_TX):
            problem = "throttled"
        if problem is None:
            part.busy_until = now + self.tx
            self.out.writes += 1
            part.total += ACTUAL_MICROS - self.reserve
            return
        wait = wait_before("jitter", attempt, self.rng)
        p = self.policy
        if attempt < p.settle_attempts and now + wait - started <= p.settle_budget_s:
            self.at(now + wait, lambda t: self.settle(t, started, attempt + 1, part))
            return
        self.out.lost_settles += 1  # the reservation stays: over-counts, never under
        self.out.stranded += self.reserve - ACTUAL_MICROS


def simulate(
    policy: Policy, flood: float, ceiling: int, tx: float = TX_SECONDS, seed: int = 13
) -> dict[str, Any]:
    rate = flood * DAY_ITEM_CAPACITY
    reserve = pricing.largest_reserve_micros(Settings())
    sim = Simulation(policy, rate, ceiling, reserve, seed, tx)
    out = sim.run()
    ledger_total = sum(p.total for p in sim.partitions)
    n = max(out.requests, 1)
    degraded = sum(v for k, v in out.counts.items() if k.startswith("degraded"))
    failed = sum(v for k, v in out.counts.items() if k.startswith("503"))
    return {
        "policy": policy.name,
        "flood": flood,
        "requests": out.requests,
        "answered_per_s": out.counts["answered"] / ARRIVAL_SECONDS,
        "degraded_share": degraded / n,
        "failed_share": failed / n,
        "overshoot": max(0, out.spent - ceiling),
        "under_counted": max(0, out.spent - ledger_total),  # the ledger must cover the bill
        "held_over": max(0, max(p.peak - p.ceiling for p in sim.partitions)),
        "lost_settles": out.lost_settles,
        "stranded": out.stranded,
        "writes_per_s": out.writes / ARRIVAL_SECONDS,
        "counts": dict(out.counts),
    }


def scenarios() -> list[tuple[str, int, float, list[Policy]]]:
    s = Settings()
    day = s.daily_ceiling_micros
    memo = replace(
        RETRY_THEN_DEGRADE, name=f"retry + memo {MEMO_SECONDS:g} s", memo_seconds=MEMO_SECONDS
    )
    shards = replace(RETRY_THEN_DEGRADE, name="retry + 4 shards", shards=4)
    both = replace(memo, name=f"retry + memo {MEMO_SECONDS:g} s + 4 shards", shards=4)
    unspent = 10_000 * day  # a ceiling the flood cannot reach: what the item can answer
    return [
        (f"Spent day (ceiling ${s.daily_ceiling_usd})", day, TX_SECONDS,
         [AS_SHIPPED, RETRY_THEN_DEGRADE, memo, shards, both, NAIVE]),
        ("Day with room (ceiling out of reach): what the item can answer", unspent, TX_SECONDS,
         [AS_SHIPPED, RETRY_THEN_DEGRADE, shards]),
        ("Sensitivity: spent day, transactions holding their items 2 ms instead of 10", day,
         0.002, [AS_SHIPPED, RETRY_THEN_DEGRADE, memo]),
    ]  # fmt: skip


def render(results: list[tuple[str, list[dict[str, Any]]]], seconds: float) -> str:
    reserve = pricing.largest_reserve_micros(Settings())
    lines = [
        f"Run by `make bench-flood` (a seeded discrete-event model, not a measurement): "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}, {ARRIVAL_SECONDS:.0f} s "
        f"of arrivals per cell, {seconds:.1f} s to run. Day item capacity = "
        f"{PARTITION_WCU} WCU/s / {WCU_PER_MESSAGE} WCU per message = "
        f"{DAY_ITEM_CAPACITY:.0f} answered messages/s; requests reach S3 at the shipped stage "
        f"throttle ({SHIPPED_THROTTLE:g}x), at 10x and at 100x that. "
        f"Reserve {reserve} micro-USD, actual {ACTUAL_MICROS}; a transaction holds its items "
        f"{TX_SECONDS * 1000:.0f} ms; the answer takes {MODEL_SECONDS} s.",
        "",
    ]
    for title, rows in results:
        lines += [
            f"**{title}**",
            "",
            "| policy | flood | answered/s | degraded | 503 | overshoot micro-USD "
            "| held over ceiling | lost settles (stranded micro-USD) | GLOBAL writes/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(
                f"| {r['policy']} | {r['flood']:g}x | {r['answered_per_s']:.1f} "
                f"| {r['degraded_share']:.1%} | {r['failed_share']:.1%} | {r['overshoot']} "
                f"| {r['held_over']} | {r['lost_settles']} ({r['stranded']}) "
                f"| {r['writes_per_s']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip()


# A simulated day (issue 21): arrivals per UTC hour of a site's normal day (a European
# audience: quiet nights, busy office hours), scaled so the normal day asks for
# DAY_DEMAND x the ceiling at ACTUAL_MICROS a message. The burst multiplies three hours
# of it, from 09:00, by BURST_X (a post shared at 09:00).
NORMAL_HOURS = (1, 1, 1, 1, 1, 2, 3, 5, 7, 8, 8, 8, 8, 8, 8, 8, 7, 6, 5, 4, 3, 2, 2, 1)
DAY_DEMAND = 0.8
BURST_X, BURST_FROM, BURST_HOURS = 10, 9, 3
EVENING = 20  # "budget answering at 20:00": the share of 20:00-21:00 answered


@dataclass(frozen=True, slots=True)
class DayRun:
    answered: int
    paced: int  # refused by pacing alone (the unpaced condition had room)
    spent_out: int  # refused on the ceiling itself
    first_refused: str
    evening_answered: float
    spent_share: float


def arrivals(
    hours: tuple[int, ...], ceiling: int, rng: random.Random, demand: float = DAY_DEMAND
) -> list[float]:
    """Seconds of the day at which messages arrive: Poisson within each hour."""
    per_weight = demand * ceiling / ACTUAL_MICROS / sum(NORMAL_HOURS)
    times: list[float] = []
    for hour, weight in enumerate(hours):
        t, rate = 0.0, weight * per_weight / 3600
        while rate > 0:
            t += rng.expovariate(rate)
            if t >= 3600:
                break
            times.append(hour * 3600 + t)
    return times


def simulate_day(
    hours: tuple[int, ...], curve: pacing.Curve | None, demand: float = DAY_DEMAND, seed: int = 3
) -> DayRun:
    """One day on one day item, with the ledger's own condition and the real curve:
    admitted iff ``total <= allowance(t) - reserve`` (allowance = ceiling unpaced); the
    reservation settles to ACTUAL_MICROS after MODEL_SECONDS."""
    ceiling = Settings().daily_ceiling_micros
    reserve = pricing.largest_reserve_micros(Settings())
    total, pending = 0, []  # pending: (settle time, released micro-USD)
    answered = paced = spent_out = evening = evening_all = 0
    first = ""
    for t in arrivals(hours, ceiling, random.Random(seed), demand):
        while pending and pending[0][0] <= t:
            total -= heapq.heappop(pending)[1]
        allowance = ceiling if curve is None else curve.allowance(ceiling, int(t))
        ok = total + reserve <= allowance
        in_evening = EVENING * 3600 <= t < (EVENING + 1) * 3600
        evening_all += in_evening
        if ok:
            answered += 1
            evening += in_evening
            total += reserve
            heapq.heappush(pending, (t + MODEL_SECONDS, reserve - ACTUAL_MICROS))
            continue
        first = first or f"{int(t) // 3600:02d}:{int(t) % 3600 // 60:02d}"
        if total + reserve <= ceiling:
            paced += 1
        else:
            spent_out += 1
    total -= sum(r for _, r in pending)
    share = evening / evening_all if evening_all else 1.0
    return DayRun(answered, paced, spent_out, first or "-", share, total / ceiling)


def day_scenarios() -> list[tuple[str, tuple[int, ...], float]]:
    burst = tuple(
        w * BURST_X if BURST_FROM <= h < BURST_FROM + BURST_HOURS else w
        for h, w in enumerate(NORMAL_HOURS)
    )
    return [
        ("normal day", NORMAL_HOURS, DAY_DEMAND),
        ("busy day (1.2x the ceiling asked)", NORMAL_HOURS, 1.2),
        (f"{BURST_X}x burst at {BURST_FROM:02d}:00", burst, DAY_DEMAND),
    ]


def day_curves() -> list[tuple[str, pacing.Curve | None]]:
    s = Settings()
    shipped = pacing.from_settings("on", s.pacing_burst_share, s.pacing_curve)
    return [
        ("pacing off", None),
        (f"pacing on, flat, burst {s.pacing_burst_share} (shipped)", shipped),
        ("pacing on, flat, burst 0.25", pacing.Curve(pacing.Fraction(1, 4))),
        ("pacing on, the site's hourly curve, burst 0.25",
         pacing.Curve(pacing.Fraction(1, 4), NORMAL_HOURS)),
    ]  # fmt: skip


def render_day() -> str:
    s = Settings()
    lines = [
        f"**A simulated day** (pacing, issue 21): ceiling ${s.daily_ceiling_usd}, reserve "
        f"{pricing.largest_reserve_micros(s)} micro-USD, actual {ACTUAL_MICROS}; the normal "
        f"day asks for {DAY_DEMAND:g}x the ceiling along a European site's hours "
        f"({', '.join(map(str, NORMAL_HOURS))} per UTC hour); the burst is {BURST_X}x that "
        f"from {BURST_FROM:02d}:00 for {BURST_HOURS} h. Seeded Poisson arrivals; the ledger's "
        f"condition with the real curve (steps/lib/money/pacing.py).",
        "",
        "| day | pacing | answered | degraded: paced | degraded: spent | first degraded "
        f"| {EVENING}:00-{EVENING + 1}:00 answered | spent at 24:00 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for day, hours, demand in day_scenarios():
        for name, curve in day_curves():
            r = simulate_day(hours, curve, demand)
            lines.append(
                f"| {day} | {name} | {r.answered} | {r.paced} | {r.spent_out} "
                f"| {r.first_refused} | {r.evening_answered:.0%} | {r.spent_share:.0%} |"
            )
    return "\n".join(lines)


def main() -> None:
    started = time.perf_counter()
    results = []
    for title, ceiling, tx, policies in scenarios():
        rows = [simulate(p, flood, ceiling, tx) for p in policies for flood in FLOODS]
        results.append((title, rows))
    body = render(results, time.perf_counter() - started) + "\n\n" + render_day()
    print(body)
    report.write_section("flood", "Flood simulation", body)
    report.write_section("flood", "The flood simulation", body, doc=SCALING)


if __name__ == "__main__":
    main()
