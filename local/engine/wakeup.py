"""Wait for an ending, woken by it, with a timeout that holds under a faked clock.

``threading.Condition.wait(timeout)`` turns its timeout into an absolute deadline on the
monotonic clock and hands that to the C library (``sem_clockwait``). Under libfaketime (the
calendar reruns of ``make test-calendar``, ``faketime -f '@...'``) the process's clocks are
shifted but that call is not translated, so a timed wait never ends and an engine timeout
never fires. ``select`` takes a relative timeout, so each waiter sleeps on a pipe of its
own and an ending writes a byte to every waiting pipe: a byte written between a waiter's
check and its sleep stays in the pipe and ends the sleep at once, so no ending is lost.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from select import select


class Wakeups:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipes: set[int] = set()  # write ends of the waiters' pipes

    def wait_until(self, done: Callable[[], bool], timeout: float, recheck: float) -> bool:
        """Until ``done()``, checked again after each ending and at least every ``recheck``
        seconds; False once ``timeout`` seconds have passed without it."""
        deadline = time.monotonic() + timeout
        read, write = os.pipe()
        os.set_blocking(write, False)
        with self._lock:
            self._pipes.add(write)  # before the first check: an ending after it wakes us
        try:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                ready, _, _ = select([read], [], [], min(left, recheck))
                if ready:
                    os.read(read, 512)
            return True
        finally:
            with self._lock:
                self._pipes.discard(write)
            os.close(read)
            os.close(write)

    def wake_all(self) -> None:
        with self._lock:
            for write in self._pipes:
                with contextlib.suppress(BlockingIOError):  # a byte is already waiting
                    os.write(write, b"\0")
