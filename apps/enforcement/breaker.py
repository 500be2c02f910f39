"""A circuit breaker in front of Redis: one per process, and on a Redis Cluster one per master (store.py).

Closed: calls go through. After `failure_threshold` failures in a row it opens: calls skip Redis and
go straight to each limit's failure policy, so no request waits on a dead Redis. After `open_s` one
call is let through as a probe (half-open); success closes the breaker, failure opens it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    def __init__(
        self, *, failure_threshold: int = 3, open_s: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._threshold = failure_threshold
        self._open_s = open_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return CLOSED
        return HALF_OPEN if self._clock() - self._opened_at >= self._open_s else OPEN

    def allow(self) -> bool:
        """May this call try Redis? While open: no. When the open period is over: one probe at a time."""
        with self._lock:
            if self._opened_at is None:
                return True
            if self._clock() - self._opened_at < self._open_s or self._probing:
                return False
            self._probing = True
            return True

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probing = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._probing or self._failures >= self._threshold:
                self._opened_at = self._clock()
            self._probing = False

    def record_abandoned(self) -> None:
        """The call failed for a reason that says nothing about Redis: a probe may be tried again."""
        with self._lock:
            self._probing = False
