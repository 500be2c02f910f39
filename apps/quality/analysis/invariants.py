"""Per-limit invariant checks over the decision log, O(1) amortized per event, one tracker per counter key.

What no admission history may show (a denied decision is not an admission; a shadow limit's breach goes to
`shadow_over`, never to the violations):
- window (fixed window, calendar): no window (the event's window_ms; for a fixed window without one, the epoch-aligned
  window of its period) admits more than quantity. Reported once per window, at the admission that overfilled it.
- sliding log: no interval (t - period, t] admits more than quantity (two pointers over a deque of admissions).
- sliding counter: the counter is approximate by design (the true count of an interval may pass quantity); the
  documented bound is its own rule, checked exactly: at each admission, floor(previous x (period - elapsed) /
  period) + current + cost <= quantity, with previous / current the admitted cost of the epoch-aligned windows.
- bucket (token, leaky, generic cell rate alike): admitted cost over any [a, b] <= burst + rate x (b - a),
  rate = quantity / period, burst = quantity when none. One pass: with P(t) the cost admitted before t, the
  worst start a for an end b maximises quantity x a - P(a) x period, a running maximum; all integer arithmetic.
- lease set and lease time (concurrency, session time): lease_invariants.py.
One report per breach episode: a window, an interval or a bucket over its bound counts once until it is back.
"""

from __future__ import annotations

import math
from collections import deque

from apps.engine.registry import ALGORITHMS
from apps.quality.analysis.check import Check
from apps.quality.analysis.events import Event
from apps.quality.analysis.lease_invariants import LeaseSetCheck, LeaseTimeCheck
from apps.quality.analysis.report import Violation


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


# One check per audit kind (algorithms/base.AuditKind); each algorithm's entry says which kind it is.
CHECK_OF_KIND: dict[str, type[Check]] = {
    "window": WindowCheck,
    "log": SlidingLogCheck,
    "sliding_counter": SlidingCounterCheck,
    "bucket": BucketCheck,
    "lease_set": LeaseSetCheck,
    "lease_time": LeaseTimeCheck,
}
CHECKS: dict[str, type[Check]] = {name: CHECK_OF_KIND[entry.audit] for name, entry in ALGORITHMS.items()}
