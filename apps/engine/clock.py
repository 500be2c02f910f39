"""Where the engine's time comes from.

In production the Redis store reads Redis server time (TIME inside the script), so a store built
with `clock=None` never lets an API host's clock decide anything. A Clock is injected only by tests
(ManualClock) and by the in-process MemoryStore (SystemClock by default).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A source of integer epoch milliseconds."""

    def now_ms(self) -> int:
        """Return the current time in milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """This process's wall clock (used in-process, and as a hint for calendar window bounds)."""

    def now_ms(self) -> int:
        """Return the wall-clock time in epoch milliseconds."""
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to: tests freeze and step time with it."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        """Return the frozen time."""
        return self._now

    def advance(self, ms: int) -> int:
        """Move time forward by `ms` (>= 0) milliseconds; return the new time."""
        if ms < 0:
            raise ValueError("a ManualClock never goes back")
        with self._lock:
            self._now += ms
            return self._now

    def set(self, now_ms: int) -> None:
        """Jump to `now_ms` (tests of clock steps may go back)."""
        self._now = now_ms
