"""Per-limit invariant checks over the decision log, O(1) amortized per event, one tracker per counter key.

What no admission history may show (a denied decision is not an admission; a shadow limit's breach goes to
`shadow_over`, never to the violations):
- window (fixed window, calendar): no window (the event's window_ms; for a fixed window without one, the epoch-aligned
  window of its period) admits more than quantity. Reported once per window, at the admission that overfilled it.
- sliding log: no interval (t - period, t] admits more than quantity (two pointers over a deque of admissions).
- sliding counter: the counter is approximate by design (the true count of an interval may pass quantity); the
  documented bound is its own rule, checked exactly: at each admission, floor(previous x (period - elapsed) /
  period) + current + cost <= quantity, with previous / current the admitted cost of the epoch-aligned windows.
- bucket (token, leaky, GCRA alike): admitted cost over any [a, b] <= burst + rate x (b - a), rate = quantity / period,
  burst = quantity when none. One pass: with P(t) the cost admitted before t, the worst start a for an end b
  maximises quantity x a - P(a) x period, a running maximum; all integer arithmetic.
- concurrency: held <= quantity at every instant (the held count settled after each millisecond's changes).
- session_time: the engine lets the last admitted session run past the quantity (a lease is never cut short),
  so the invariant is on admissions: no acquire, renew or allowed check while the window's session time
  (released or expired sessions, and open ones up to now) has already reached quantity seconds.
One report per breach episode: a window, an interval or a bucket over its bound counts once until it is back.
"""

from __future__ import annotations

import math
from collections import deque

from apps.engine.registry import ALGORITHMS
from apps.quality.analysis.concurrency import Level
from apps.quality.analysis.events import Event
from apps.quality.analysis.report import LimitSummary, Violation

SECOND_MS = 1000
UNBOUNDED_MS = 1 << 62  # a session time limit without a period: one window


class Check:
    """The tracker of one counter key: its counts, its peak against its bound, its breaches."""

    __slots__ = ("admitted", "cost", "denied", "first", "over", "peak", "bound", "sink", "violations")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        self.first = first
        self.sink = sink
        self.admitted = self.cost = self.denied = self.violations = 0
        self.peak: float = 0
        self.bound: float = first.quantity
        self.over = False

    def admit(self, event: Event) -> None:
        self.admitted += 1
        self.cost += event.cost

    def admission(self, at: int) -> None:
        """A lease acquired or renewed under this limit (only session time has a rule on it)."""

    def violate(self, at: int, kind: str, detail: str, observed: float, allowed: float | None = None) -> None:
        first, bound = self.first, self.bound if allowed is None else allowed
        self.violations += 1
        self.sink.append(
            Violation(at, first.customer, first.limit, first.key, first.algorithm, kind, detail, observed, bound)
        )

    def summary(self) -> LimitSummary:
        f = self.first
        summary = LimitSummary(f.key, f.customer, f.limit, f.algorithm, f.quantity, f.period_ms, f.burst, f.shadow)
        summary.admitted, summary.admitted_cost, summary.denied = self.admitted, self.cost, self.denied
        summary.peak, summary.allowed, summary.violations = self.peak, self.bound, self.violations
        return summary


class WindowCheck(Check):
    __slots__ = ("spent", "window")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.window: int | None = None
        self.spent = 0

    def admit(self, event: Event) -> None:
        self.admitted += 1
        self.cost += event.cost
        at, window = event.at_ms, event.window_ms
        if not window and event.period_ms > 0:
            window = at - at % event.period_ms
        if window != self.window:
            self.window, self.spent, self.over = window, 0, False
        self.spent += event.cost
        if self.spent > self.peak:
            self.peak = self.spent
        if self.spent > self.bound and not self.over:
            self.over = True
            self.violate(at, "over_window", f"the window starting at {window} admitted {self.spent}", self.spent)


class SlidingLogCheck(Check):
    __slots__ = ("entries", "total")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.entries: deque[tuple[int, int]] = deque()
        self.total = 0

    def admit(self, event: Event) -> None:
        self.admitted += 1
        self.cost += event.cost
        at, entries = event.at_ms, self.entries
        entries.append((at, event.cost))
        self.total += event.cost
        cutoff = at - event.period_ms
        while entries[0][0] <= cutoff:
            self.total -= entries.popleft()[1]
        total = self.total
        if total > self.peak:
            self.peak = total
        if total > self.bound:
            if not self.over:
                self.over = True
                detail = f"{total} admitted in ({cutoff}, {at}]"
                self.violate(at, "over_sliding", detail, total)
        else:
            self.over = False


class SlidingCounterCheck(Check):
    __slots__ = ("current", "previous", "start")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.start: int | None = None
        self.current = self.previous = 0

    def admit(self, event: Event) -> None:
        self.admitted += 1
        self.cost += event.cost
        at, period = event.at_ms, event.period_ms
        start = at - at % period
        if start != self.start:
            stored = self.start
            self.previous = self.current if stored is not None and stored == start - period else 0
            self.start, self.current, self.over = start, 0, False
        weighted = math.floor(float(self.previous) * float(period - (at - start)) / period)
        estimate = weighted + self.current + event.cost
        self.current += event.cost
        if estimate > self.peak:
            self.peak = estimate
        if estimate > self.bound and not self.over:
            self.over = True
            detail = f"weighted previous {weighted} + current {self.current} in the window starting at {start}"
            self.violate(at, "over_counter", detail, estimate)


class BucketCheck(Check):
    __slots__ = ("before", "best", "best_at", "best_before", "capacity")

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        super().__init__(first, sink)
        self.capacity = first.burst or first.quantity
        self.before = 0
        self.best: int | None = None
        self.best_at = self.best_before = 0

    def admit(self, event: Event) -> None:
        self.admitted += 1
        self.cost += event.cost
        at, rate, period = event.at_ms, event.quantity, event.period_ms
        candidate = rate * at - self.before * period
        if self.best is None or candidate > self.best:
            self.best, self.best_at, self.best_before = candidate, at, self.before
        self.before += event.cost
        admitted = self.before - self.best_before
        allowed = self.capacity + rate * (at - self.best_at) / period
        if admitted - allowed > self.peak - self.bound:
            self.peak, self.bound = admitted, allowed
        if (self.before * period - rate * at + self.best) > self.capacity * period:
            if not self.over:
                self.over = True
                detail = f"{admitted} admitted in [{self.best_at}, {at}], bucket allows {allowed:g}"
                self.violate(at, "over_bucket", detail, admitted, allowed)
        else:
            self.over = False


class ConcurrencyCheck(Check):
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


class SessionTimeCheck(Check):
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


# One check per audit kind (algorithms/base.AuditKind); each algorithm's entry says which kind it is.
CHECK_OF_KIND: dict[str, type[Check]] = {
    "window": WindowCheck,
    "log": SlidingLogCheck,
    "sliding_counter": SlidingCounterCheck,
    "bucket": BucketCheck,
    "concurrency": ConcurrencyCheck,
    "session_time": SessionTimeCheck,
}
CHECKS: dict[str, type[Check]] = {name: CHECK_OF_KIND[entry.audit] for name, entry in ALGORITHMS.items()}
