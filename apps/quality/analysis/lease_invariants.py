"""The invariants of the leased algorithms (audit kinds lease_set and lease_time; invariants.py has the rest):

- lease set (concurrency): held <= quantity at every instant (the held count settled after each millisecond's
  changes).
- lease time (session time): the engine lets the last admitted session run past the quantity (a lease is never
  cut short), so the invariant is on admissions: no acquire, renew or allowed check while the window's session
  time (released or expired sessions, and open ones up to now) has already reached quantity seconds.
"""

from __future__ import annotations

from apps.quality.analysis.check import Check
from apps.quality.analysis.events import Event
from apps.quality.analysis.parallel_leases import Level
from apps.quality.analysis.report import LimitSummary, Violation

SECOND_MS = 1000
UNBOUNDED_MS = 1 << 62  # a session time limit without a period: one window


class LeaseSetCheck(Check):
    """Leases held under this key; an allowed check only looks (the acquires count the admissions)."""

    __slots__ = ("held",)

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.held = Level()

    def admit(self, event: Event) -> None:
        pass

    def _change(self, at: int, delta: int) -> None:
        held = self.held
        since = held.since
        if since is not None and at > since:
            level = held.level
            if level > self.bound:
                if not self.over:
                    self.over = True
                    self.violate(since, "over_concurrency", f"{level} leases held from {since} to {at}", level)
            else:
                self.over = False
        held.change(at, delta)

    def lease_start(self, at: int) -> None:
        self._change(at, 1)

    def lease_end(self, at: int) -> None:
        self._change(at, -1)

    def summary(self) -> LimitSummary:
        self.peak = self.held.max_value
        return Check.summary(self)


class LeaseTimeCheck(Check):
    """Lease milliseconds in the epoch-aligned window of the period; bound and peak in seconds."""

    __slots__ = ("level", "period", "reported", "since", "used", "window")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.period = first.period_ms if first.period_ms > 0 else UNBOUNDED_MS
        self.window = self.since = first.at_ms - first.at_ms % self.period
        self.used = self.level = 0
        self.reported: int | None = None

    def used_at(self, at: int) -> int:
        """Session milliseconds of at's window up to at (at >= every time seen)."""
        since, period = self.since, self.period
        if at > since:
            start = at - at % period
            if start != self.window:
                done = self.used + self.level * (self.window + period - since)
                full = self.level * period if start > self.window + period else 0
                self.peak = max(self.peak, done / SECOND_MS, full / SECOND_MS)
                self.window, self.used = start, self.level * (at - start)
            else:
                self.used += self.level * (at - since)
            self.since = at
        return self.used

    def admission(self, at: int) -> None:
        used = self.used_at(at)
        if used >= self.bound * SECOND_MS and self.reported != self.window:
            self.reported = self.window
            detail = f"admitted with {used / SECOND_MS:g} s already used in the window starting at {self.window}"
            self.violate(at, "over_session_time", detail, used / SECOND_MS)

    def admit(self, event: Event) -> None:
        Check.admit(self, event)
        self.admission(event.at_ms)

    def lease_start(self, at: int) -> None:
        self.used_at(at)
        self.level += 1

    def lease_end(self, at: int) -> None:
        self.used_at(at)
        self.level -= 1

    def summary(self) -> LimitSummary:
        self.peak = max(self.peak, self.used / SECOND_MS)
        return Check.summary(self)
