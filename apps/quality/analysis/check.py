"""Check: the tracker of one counter key in the audit, which every invariant (invariants.py,
lease_invariants.py) extends with its own rule."""

from __future__ import annotations

from apps.quality.analysis.events import Event
from apps.quality.analysis.report import LimitSummary, Violation


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
