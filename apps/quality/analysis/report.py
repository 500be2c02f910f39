"""What one audit found: the violations, and per customer / group / limit the figures of the seed's quality check.

`AuditReport.to_json()` is plain JSON (ints, floats, strings, lists, dicts; times are epoch ms):

    {
      "version": 1,
      "events": 1000000,                       # events read
      "from_ms": 1705276800000, "to_ms": ...,  # first and last event time (null when no event)
      "violation_count": 0,
      "violations": [VIOLATION, ...],          # in time order
      "shadow_over": [VIOLATION, ...],         # the same checks on shadow limits: reported, never violations
      "unchecked": {"hybrid windows unfinished": 2},   # what the audit could not check, by reason
      "limits": [LIMIT, ...],                  # one per counter key with decisions or lease events, by key
      "customers": {"<customer>": SCOPE, ...},
      "groups": {"<group>": SCOPE, ...},       # groups = the `groups` mapping given (customer -> plan)
      "top": {"customers": [TOP, ...], "groups": [TOP, ...]}   # by peak monopolization, highest first
    }
    VIOLATION = {"at_ms": int, "customer": str, "limit": str, "key": str, "algorithm": str,
                 "kind": str,          # over_window | over_sliding | over_counter | over_bucket
                                       # | over_concurrency | over_session_time
                                       # | over_hybrid_bound (hybrid limits, per window: analysis/hybrid.py)
                 "detail": str, "observed": number, "allowed": number}
    LIMIT = {"key": str, "customer": str, "limit": str, "algorithm": str, "quantity": int, "period_ms": int,
             "burst": int, "shadow": bool, "admitted": int, "admitted_cost": int, "denied": int,
             "peak": number,       # the largest value the check compared with "allowed": leases held at once,
                                   # cost in a window / sliding interval, the weighted estimate (sliding window),
                                   # session seconds in a window; for buckets the cost admitted in the worst
                                   # interval, with "allowed" its burst + rate x length
             "allowed": number, "violations": int,
             "mode": "exact" | "hybrid", "windows": int, "exchanges": int}
                                   # admitted: allowed decisions (concurrency: acquires); denied: denied decisions
                                   # hybrid (checked from its `sync` exchanges, one entry per counter key):
                                   # admitted and denied 0 (decisions not logged one by one), admitted_cost the
                                   # windows' reported totals, peak / allowed the total and bound of the window
                                   # closest to (or furthest over) its bound, windows checked, exchanges read
    SCOPE = {"group": str | null,      # customers only
             "customers": int,          # groups only (0 for a customer)
             "sessions": int,           # leases acquired
             "session_ms": int,         # total lease time (acquire to release, or to the last expiry)
             "max_concurrency": {"value": int, "at_ms": int | null, "duration_ms": int},
                                         # most leases held at once, when that first happened, how long it lasted
             "max_openings": {"<limit>": {"value": int, "at_ms": int | null, "period_ms": int, "quantity": int}},
                                         # most acquisitions in any sliding interval of the limit's period
             "monopolization": {"peak": float, "peak_at_ms": int | null,
                                "points": [[at_ms, score], ...]}}   # <= 500 points, each the max of its span
    TOP = {"name": str, "score": float, "at_ms": int | null, "session_ms": int}
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

VERSION = 1


@dataclass(frozen=True, slots=True)
class Violation:
    """One breach of a limit's invariant (or, for a shadow limit, of what it would have enforced)."""

    at_ms: int
    customer: str
    limit: str
    key: str
    algorithm: str
    kind: str
    detail: str
    observed: float
    allowed: float


@dataclass(slots=True)
class LimitSummary:
    """The figures of one counter key."""

    key: str
    customer: str
    limit: str
    algorithm: str
    quantity: int
    period_ms: int
    burst: int
    shadow: bool
    admitted: int = 0
    admitted_cost: int = 0
    denied: int = 0
    peak: float = 0
    allowed: float = 0
    violations: int = 0
    mode: str = "exact"
    windows: int = 0
    exchanges: int = 0


@dataclass(frozen=True, slots=True)
class Peak:
    value: int
    at_ms: int | None
    duration_ms: int


@dataclass(frozen=True, slots=True)
class Openings:
    value: int
    at_ms: int | None
    period_ms: int
    quantity: int


@dataclass(frozen=True, slots=True)
class Monopolization:
    peak: float
    peak_at_ms: int | None
    points: list[tuple[int, float]]


@dataclass(frozen=True, slots=True)
class ScopeSummary:
    """A customer's or a group's figures."""

    group: str | None
    customers: int
    sessions: int
    session_ms: int
    max_concurrency: Peak
    max_openings: dict[str, Openings]
    monopolization: Monopolization


@dataclass(frozen=True, slots=True)
class Top:
    name: str
    score: float
    at_ms: int | None
    session_ms: int


def _scope_json(scope: ScopeSummary) -> dict[str, Any]:
    body = asdict(scope)
    body["monopolization"]["points"] = [[at, round(score, 6)] for at, score in scope.monopolization.points]
    body["monopolization"]["peak"] = round(scope.monopolization.peak, 6)
    return body


@dataclass(slots=True)
class AuditReport:
    """The audit's answer; see the module docstring for to_json()'s shape."""

    events: int = 0
    from_ms: int | None = None
    to_ms: int | None = None
    violations: list[Violation] = field(default_factory=list)
    shadow_over: list[Violation] = field(default_factory=list)
    unchecked: dict[str, int] = field(default_factory=dict)
    limits: list[LimitSummary] = field(default_factory=list)
    customers: dict[str, ScopeSummary] = field(default_factory=dict)
    groups: dict[str, ScopeSummary] = field(default_factory=dict)
    top_customers: list[Top] = field(default_factory=list)
    top_groups: list[Top] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "events": self.events,
            "from_ms": self.from_ms,
            "to_ms": self.to_ms,
            "violation_count": len(self.violations),
            "violations": [asdict(v) for v in self.violations],
            "shadow_over": [asdict(v) for v in self.shadow_over],
            "unchecked": dict(self.unchecked),
            "limits": [asdict(limit) for limit in self.limits],
            "customers": {name: _scope_json(scope) for name, scope in self.customers.items()},
            "groups": {name: _scope_json(scope) for name, scope in self.groups.items()},
            "top": {
                "customers": [asdict(top) for top in self.top_customers],
                "groups": [asdict(top) for top in self.top_groups],
            },
        }

    def summary_lines(self) -> list[str]:
        """A few lines for a terminal or a job's output, then one line per violation."""
        span = f" from {utc_text(self.from_ms)} to {utc_text(self.to_ms)}" if self.events else " (none in the range)"
        lines = [
            f"events: {self.events}{span}",
            f"limits checked: {len(self.limits)}, customers: {len(self.customers)}, groups: {len(self.groups)}",
            f"violations: {len(self.violations)}, shadow over: {len(self.shadow_over)}",
        ]
        lines += [f"unchecked ({reason}): {count}" for reason, count in sorted(self.unchecked.items())]
        for title, tops in (("customers", self.top_customers), ("groups", self.top_groups)):
            if tops:
                names = ", ".join(f"{top.name} {top.score:.2f}" for top in tops)
                lines.append(f"top monopolizing {title}: {names}")
        lines += [_violation_line(v) for v in self.violations]
        return lines


def utc_text(at_ms: int | None) -> str:
    """An epoch-ms time as people read it: ISO 8601 in UTC to the millisecond, or "none"."""
    if at_ms is None:
        return "none"
    return dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _violation_line(v: Violation) -> str:
    return (
        f"VIOLATION {v.kind} at {utc_text(v.at_ms)} customer={v.customer} limit={v.limit} key={v.key} "
        f"({v.algorithm}): {v.detail} (observed {v.observed:g}, allowed {v.allowed:g})"
    )
