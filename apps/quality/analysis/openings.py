"""Openings (lease acquisitions) in a sliding interval of a limit's period: two pointers over a deque.

SlidingCount keeps the acquisition times of the interval (t - period, t] in a deque: each new time is
appended (front pointer) and the times that slid out are dropped from the left (back pointer), so each time
enters and leaves once: O(1) amortized per acquisition. Its maximum is the most openings in any interval of
that length (the count is largest right after an opening, so looking at openings only is exact).

OpeningsBook holds a customer's (or group's) counters, one per window limit seen on the operation the leases
are acquired with. A limit is learnt from the log itself, the first time one of its events is read; the
acquisitions read before that are replayed from a short memory of the recent ones (as long as the longest
period known so far), so a limit first seen after older acquisitions may undercount them, never overcount.
"""

from __future__ import annotations

from collections import deque


class SlidingCount:
    """Acquisitions in (t - period, t], and the most in any such interval."""

    __slots__ = ("best", "best_at", "period", "quantity", "times")

    def __init__(self, period: int, quantity: int) -> None:
        self.period = period
        self.quantity = quantity
        self.times: deque[int] = deque()
        self.best = 0
        self.best_at: int | None = None

    def add(self, at: int) -> None:
        times = self.times
        times.append(at)
        cutoff = at - self.period
        while times[0] <= cutoff:
            times.popleft()
        if len(times) > self.best:
            self.best, self.best_at = len(times), at

    def count_at(self, at: int) -> int:
        times = self.times
        cutoff = at - self.period
        while times and times[0] <= cutoff:
            times.popleft()
        return len(times)


class OpeningsBook:
    """A scope's sliding counters by operation and limit name."""

    __slots__ = ("active", "by_limit", "by_operation", "horizon", "recent")

    def __init__(self) -> None:
        self.by_limit: dict[str, SlidingCount] = {}
        self.by_operation: dict[str, list[SlidingCount]] = {}
        self.active: list[SlidingCount] = []  # the counters with an opening, the only ones with pressure
        self.recent: deque[tuple[int, str]] = deque()
        self.horizon = 0

    def note_limit(self, limit: str, operation: str, period: int, quantity: int) -> None:
        """A window limit on `operation`: count its openings from now on, and the recent ones replayed."""
        if limit in self.by_limit or period <= 0:
            return
        counter = self.by_limit[limit] = SlidingCount(period, quantity)
        self.by_operation.setdefault(operation, []).append(counter)
        for at, acquired_on in self.recent:
            if acquired_on == operation:
                counter.add(at)
        if counter.best and quantity > 0:
            self.active.append(counter)
        self.horizon = max(self.horizon, period)

    def opened(self, at: int, operation: str) -> None:
        recent = self.recent
        recent.append((at, operation))
        cutoff = at - self.horizon
        while recent[0][0] < cutoff:
            recent.popleft()
        for counter in self.by_operation.get(operation, ()):
            if not counter.best and counter.quantity > 0:
                self.active.append(counter)
            counter.add(at)

    def pressure(self, at: int) -> float | None:
        """The largest openings / quantity over the limits now (None when no limit is known)."""
        best = None
        for counter in self.active:
            ratio = counter.count_at(at) / counter.quantity
            if best is None or ratio > best:
                best = ratio
        return best
