"""The spent-day memo: a container that saw a day (shard) refused stops writing to it.

When S3's reservation is refused on a day or month shard's ceiling, this container
remembers it and refuses later reservations on that shard without a DynamoDB call, until
the memory can be shown stale. Under a flood on a spent day this turns every request's
cancelled transaction (which still consumes write units on ``pk=GLOBAL``) into no write.

**Why it is money-safe.** The memo can only answer "refuse"; it never admits. A request
the memo does not refuse goes on to the very same conditional write
(``total <= ceiling - reserve``) on the very same ledger state as without the memo, so
every reservation admitted with the memo on passes that condition, and link 2 of the cost
bound (pricing.py, docs/internals.md) is untouched: no overshoot, whatever the memo holds,
however stale. Per decision, the memo turns some admissions into refusals and nothing
else. (Over a whole sequence the admitted sets may differ both ways: a request the memo
refused leaves room that a later one, refused without the memo, may then take; each
admission still passed the condition.) What staleness can cost is availability (degraded
answers while the day had room), never money; hence the short life below.

**When the memory is stale.** Two facts come back with a refusal, and they age
differently:

- "the total was above ``ceiling - reserve``": totals fall when reservations settle below
  their reserve, so this is only trusted for ``seconds`` (default 15);
- ``settledMicros``, what already settled on that item (the refused item's old attributes,
  ``ReturnValuesOnConditionCheckFailure``): it only grows (settling adds an actual >= 0)
  and a total never falls below it, so ``ceiling - settled`` bounds the room the item can
  ever have again this period. A reserve larger than that is refused for the rest of the
  day without a write, which the conditional write would refuse anyway.

A memory is keyed by day, shard and the shard's ceilings, so a new day or a changed
ceiling starts without one. A refusal that pacing alone caused (pacing.py) also keeps the
day total it met, so a request the memo refuses is still told when more is released.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

DEFAULT_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class _Memory:
    until: float  # the refusal itself is trusted until then
    room_at_most: int | None  # the most room the shard can have again this period
    paced_cost: int | None = None  # the day total met, when pacing alone refused


MemoKey = tuple[str, int, int, int]  # day, shard, day ceiling, month ceiling (per shard)


class SpentMemo:
    """One per container (module scope in steps/cost_gate.py); thread-safe for the tests."""

    def __init__(self, seconds: float = DEFAULT_SECONDS) -> None:
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        self.seconds = seconds
        self._memories: dict[MemoKey, _Memory] = {}
        self._lock = threading.Lock()

    def refuses(self, key: MemoKey, micros: int, now: float) -> bool:
        """True when a reservation of ``micros`` on this shard is known to be refused."""
        with self._lock:
            memory = self._memories.get(key)
        if memory is None:
            return False
        if now < memory.until:
            return True
        return memory.room_at_most is not None and micros > memory.room_at_most

    def paced_cost(self, key: MemoKey) -> list[int]:
        """The day total a remembered refusal by pacing alone met ([] for any other)."""
        with self._lock:
            memory = self._memories.get(key)
        return [] if memory is None or memory.paced_cost is None else [memory.paced_cost]

    def remember(
        self, key: MemoKey, now: float, room_at_most: int | None, paced_cost: int | None = None
    ) -> None:
        """Record a refusal on ``key`` seen at ``now``; ``room_at_most`` from settledMicros."""
        if self.seconds == 0 and room_at_most is None:
            return
        with self._lock:
            # Other days can no longer be reserved on: forget them (bounded memory).
            day = key[0]
            for old in [k for k in self._memories if k[0] != day]:
                del self._memories[old]
            previous = self._memories.get(key)
            known = previous.room_at_most if previous is not None else None
            rooms = [r for r in (room_at_most, known) if r is not None]
            self._memories[key] = _Memory(
                now + self.seconds, min(rooms) if rooms else None, paced_cost
            )

    def clear(self) -> None:
        with self._lock:
            self._memories.clear()


# This container's memo: S3 passes it to ledger.reserve; caches.reset_all clears it.
CONTAINER = SpentMemo()
