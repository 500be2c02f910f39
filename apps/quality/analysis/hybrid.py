"""Hybrid limits (`sync_ms`, docs/hybrid.md) checked from their exchanges: O(1) amortized per `sync` event.

A hybrid limit decides in each instance; the log has no decision of it, only every exchange of an audited one
(hybrid_sync.lua): instance i reported, at the store's time, its absolute admitted count in its window and in
the window before. Per counter key and window W (the reported window starts):

    F_i       the last count instance i reported for W: as its window, or as its previous window at its
              exchanges in the next one (the first of which reports W's final count)
    total(W)  = sum of F_i over the instances
    D_i       what i admitted in its last two sync intervals of W: F_i minus the smallest of the counts it
              reported before its last two changes of count (0 before its first report)
    N         the instances that reported W as their window, or a count above 0 for it
    bound(W)  = min(quantity + sum of D_i, N x quantity)

Why the bound holds (docs/hybrid.md "The bound"): the window's last admission, at T by instance j, passed
own_j + known_j + cost <= quantity, known_j being the others' counts the store held at j's last exchange E_j,
made less than sync_ms before T (a decision exchanges first when sync_ms has passed). Instance i's count held
then came from its last exchange before E_j; its exchanges are at least sync_ms apart within a window, so it
made at most one more before T, and the ones after T add nothing after their first (nobody admits after T).
So F_i exceeds what j knew of it by at most its last two changes, and total(W) <= quantity + sum D_i. Every
instance also admits at most quantity per window by itself (N x quantity). A log cut short (the range's start
or end) only makes the bound looser or the total smaller: the check may miss a breach, never invent one.

A breach is one violation `over_hybrid_bound` per window, at the first exchange after which the reported total
passed the window's bound. A window is checked once OPEN_WINDOWS newer windows of its key were reported (an
instance reports W for the last time at its first exchange of the next window) or at the end of the pass; a
report for a window already checked is counted, not used. What it cannot see: individual hybrid decisions, and
what an instance admitted after its last exchange of a window when it never exchanged again (a killed worker,
an SDK limiter that stopped): such windows are counted in `unfinished`.
"""

from __future__ import annotations

from apps.quality.analysis.events import Event
from apps.quality.analysis.report import LimitSummary, Violation

OPEN_WINDOWS = 3
OVER_HYBRID_BOUND = "over_hybrid_bound"


class _Reports:
    """One instance's reports for one window: its count now, the two distinct counts before (0 at first)."""

    __slots__ = ("before", "count", "earlier", "final", "present")

    def __init__(self) -> None:
        self.count = self.before = self.earlier = 0
        self.present = False  # it reported the window as its current one
        self.final = False  # it reported the window as its previous one (its final count)

    def update(self, count: int) -> None:
        if count != self.count:
            self.earlier, self.before, self.count = self.before, self.count, count

    @property
    def spread(self) -> int:
        """D_i: its count minus the smallest it reported before its last two changes (module docstring)."""
        return max(0, self.count - min(self.earlier, self.before))


class _Window:
    __slots__ = ("instances", "quantity", "steps", "sync_ms", "top", "total")

    def __init__(self) -> None:
        self.instances: dict[str, _Reports] = {}
        self.total = self.top = self.quantity = self.sync_ms = 0
        self.steps: list[tuple[int, int]] = []  # (time, total) at every new highest total: the breach's time


class HybridCheck:
    """The exchanges of one hybrid counter key: each window's reported total against its bound."""

    __slots__ = (
        "admitted",
        "allowed",
        "closed_until",
        "exchanges",
        "first",
        "late",
        "open",
        "peak",
        "sink",
        "unfinished",
        "violations",
        "windows",
    )

    def __init__(self, first: Event, sink: list[Violation]) -> None:
        self.first, self.sink = first, sink
        self.open: dict[int, _Window] = {}
        self.closed_until: int | None = None
        self.exchanges = self.windows = self.admitted = self.late = self.unfinished = self.violations = 0
        self.peak: float = 0
        self.allowed: float = first.quantity

    def report(self, event: Event) -> None:
        """One exchange: the instance's count in its window, and in the window before."""
        self.exchanges += 1
        self._count(event, event.window_ms, event.cost, True)
        start = event.prev_window_ms
        if start < event.window_ms and (event.prev_count or start in self.open):
            self._count(event, start, event.prev_count, False)

    def _count(self, event: Event, start: int, count: int, current: bool) -> None:
        window = self.open.get(start)
        if window is None:
            if self.closed_until is not None and start <= self.closed_until:
                self.late += 1
                return
            window = self.open[start] = _Window()
            if len(self.open) > OPEN_WINDOWS:
                self.close(min(self.open))
        reports = window.instances.get(event.instance)
        if reports is None:
            reports = window.instances[event.instance] = _Reports()
        before = reports.count
        reports.update(count)
        if current:
            reports.present = True
        else:
            reports.final = True
        window.total += reports.count - before
        if window.total > window.top:
            window.top = window.total
            window.steps.append((event.at_ms, window.total))
        window.quantity = max(window.quantity, event.quantity)
        window.sync_ms = max(window.sync_ms, event.sync_ms)

    def close(self, start: int) -> None:
        """Check the window starting at `start` (no report for it is used after this)."""
        window = self.open.pop(start)
        if self.closed_until is None or start > self.closed_until:
            self.closed_until = start
        reports = window.instances.values()
        quantity, total = window.quantity, window.total
        instances = sum(1 for r in reports if r.present or r.count > 0)
        spread = sum(r.spread for r in reports)
        bound = min(quantity + spread, instances * quantity)
        self.windows += 1
        self.admitted += total
        if any(r.present and not r.final for r in reports):
            self.unfinished += 1
        if total - bound > self.peak - self.allowed:
            self.peak, self.allowed = total, bound
        if total > bound:
            at = next(at for at, reached in window.steps if reached > bound)
            detail = (
                f"the window starting at {start} admitted {total} by the reports of {instances} instances: over"
                f" limit {quantity} + {spread} admitted in their last two sync intervals (sync_ms"
                f" {window.sync_ms}), and at most {instances} x {quantity}"
            )
            self.violate(at, detail, total, bound)

    def violate(self, at: int, detail: str, observed: int, allowed: int) -> None:
        f = self.first
        self.violations += 1
        self.sink.append(
            Violation(at, f.customer, f.limit, f.key, f.algorithm, OVER_HYBRID_BOUND, detail, observed, allowed)
        )

    def close_all(self) -> None:
        for start in sorted(self.open):
            self.close(start)

    def summary(self) -> LimitSummary:
        f = self.first
        summary = LimitSummary(f.key, f.customer, f.limit, f.algorithm, f.quantity, f.period_ms, 0, f.shadow)
        summary.admitted_cost, summary.peak, summary.allowed = self.admitted, self.peak, self.allowed
        summary.violations, summary.mode = self.violations, "hybrid"
        summary.windows, summary.exchanges = self.windows, self.exchanges
        return summary
