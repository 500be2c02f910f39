"""A circuit breaker in front of Redis: one per process, and on a Redis Cluster one per master (store.py).

Closed: calls go through. After `failure_threshold` failures in a row it opens: calls skip Redis and
go straight to each limit's failure policy, so no request waits on a dead Redis. After `open_s` one
call is let through as a probe (half-open); success closes the breaker, failure opens it again.

Before it opens, it asks `confirm` (a PING within the timeout, store.py) whether Redis itself answers. If it does,
the failures were the calls' own (a request Redis refused, an expensive or broken one) and the breaker stays
closed: one caller's failing requests must not send every other tenant to its failure policy. Only one thread
confirms at a time; failures meanwhile are counted, and open nothing by themselves.

A probe that could not reach Redis at all (refused, timed out) reopens the breaker without asking: the PING that
opened it failed the same way, and asking again made each probe wait out two timeouts instead of one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    def __init__(
        self,
        *,
        failure_threshold: int = 3,
        open_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        confirm: Callable[[], bool] | None = None,
    ) -> None:
        self._threshold = failure_threshold
        self._open_s = open_s
        self._clock = clock
        self._confirm = confirm
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self._confirming = False

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

    def record_failure(self, *, unreachable: bool = False) -> None:
        """unreachable: the call never reached Redis (a refused connection, a timeout), as opposed to a call that
        Redis answered with an error."""
        with self._lock:
            self._failures += 1
            probe_lost = self._probing and unreachable
            due = self._probing or self._failures >= self._threshold
            self._probing = False
            if not due or self._confirming:
                return
            confirm = self._confirm
            if confirm is None or probe_lost:
                self._opened_at = self._clock()
                return
            self._confirming = True
        alive = _answers(confirm)  # outside the lock: a PING may take the whole timeout
        with self._lock:
            self._confirming = False
            if alive:
                self._failures, self._opened_at = 0, None
            else:
                self._opened_at = self._clock()

    def record_abandoned(self) -> None:
        """The call failed for a reason that says nothing about Redis: a probe may be tried again."""
        with self._lock:
            self._probing = False


def _answers(confirm: Callable[[], bool]) -> bool:
    try:
        return confirm()
    except Exception:  # whatever stops the confirmation says Redis did not answer
        return False
