"""audit(): the seed's quality check over the decision and session log, in ONE pass over the merged events.

Each stream is one Redis slot's (or stored slot's) log, ordered by time; the streams are merged (heapq, k
streams) and every event is dispatched to the trackers of its counter key (invariants.py), of its customer and
its group (monopolization.py), and to the live leases (parallel_leases.py). Nothing sorts the range; the work per
event is O(1) amortized but for the expiry heap, O(log k) with k live leases.

Hybrid limits (`sync_ms`) are checked per window from their `sync` exchanges (hybrid.py): the window's
reported total within the documented bound.

What the audit cannot see: decisions on limits without `audit: true`; individual hybrid decisions (only their
windows' totals, from the exchanges), and what a hybrid instance admitted after its last exchange of a window
when it never exchanged again (`unchecked`: "hybrid windows unfinished"); what happened before the range (a
window or a bucket already partly used, leases acquired earlier): it then undercounts, so it may miss a breach
but never invents one.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping

from apps.engine.registry import ALGORITHMS
from apps.quality.analysis.check import Check
from apps.quality.analysis.events import (
    ACQUIRE,
    ALLOW,
    DENY,
    EXPIRE,
    LEASE_SET_ALGORITHMS,
    LEASE_TIME_ALGORITHMS,
    LEASED_ALGORITHMS,
    OPENING_ALGORITHMS,
    RELEASE,
    RENEW,
    SYNC,
    Event,
)
from apps.quality.analysis.hybrid import HybridCheck
from apps.quality.analysis.invariants import CHECKS
from apps.quality.analysis.merge import merge_streams, out_of_order
from apps.quality.analysis.monopolization import Scope
from apps.quality.analysis.parallel_leases import LeaseBook
from apps.quality.analysis.report import AuditReport, ScopeSummary, Top, Violation

PROGRESS_EVERY = 10_000
# The audit kinds whose check needs the limit's period (a window algorithm's decisions carry their window).
NEEDS_PERIOD = frozenset(
    name for name, entry in ALGORITHMS.items() if entry.audit in ("log", "sliding_counter", "bucket", "lease_time")
)


def audit(
    streams: Iterable[Iterable[Event]],
    *,
    groups: Mapping[str, str] | None = None,
    progress: Callable[[int], None] | None = None,
    top: int = 10,
) -> AuditReport:
    """Check every limit's invariant and measure concurrency, openings, session time and monopolization.

    `streams`: each ordered by at_ms (StreamOrderError otherwise). `groups`: customer -> group (plan); a
    customer missing from it belongs to no group. `progress(n)` is called every 10,000 events with the count
    read so far. `top`: how many customers and groups the ranking of monopolizers keeps.
    """
    state = _Audit(groups or {})
    feed = state.feed
    count = 0
    collecting = gc.isenabled()
    gc.disable()  # millions of live events: the cyclic collector's full passes would make the pass superlinear
    try:
        for event in merge_streams(streams):
            feed(event)
            count += 1
            if progress is not None and count % PROGRESS_EVERY == 0:
                progress(count)
        return state.finish(count, top)
    finally:
        if collecting:
            gc.enable()


class _Audit:
    def __init__(self, groups: Mapping[str, str]) -> None:
        self.group_of = groups
        self.customers: dict[str, Scope] = {}
        self.groups: dict[str, Scope] = {}
        self.checks: dict[str, Check | None] = {}
        self.hybrids: dict[str, HybridCheck] = {}
        self.book = LeaseBook()
        self.violations: list[Violation] = []
        self.shadow_over: list[Violation] = []
        self.unchecked: dict[str, int] = {}
        self.first: int | None = None
        self.last = 0

    def feed(self, event: Event) -> None:
        at = event.at_ms
        if at < self.last:
            raise out_of_order(event, self.last)
        if self.first is None:
            self.first = at
        self.last = at
        heap = self.book.heap
        if heap and heap[0][0] <= at:
            self.book.expire_until(at)
        kind = event.kind
        if kind in (ALLOW, DENY):
            self.decision(event)
        elif kind in (ACQUIRE, RENEW):
            self.acquire(event)
        elif kind in (RELEASE, EXPIRE):
            self.book.end(at, event.lease)
        elif kind == SYNC:
            self.sync(event)
        else:
            self.skip(f"unknown kind {kind!r}")

    def skip(self, reason: str, count: int = 1) -> None:
        if count:
            self.unchecked[reason] = self.unchecked.get(reason, 0) + count

    def decision(self, event: Event) -> None:
        if event.mode != "exact":
            self.skip(f"{event.mode} decisions")
            return
        scope = self.customers.get(event.customer) or self.customer(event.customer)
        if event.limit not in scope.seen:
            self.note(scope, event)
        check = self.checks.get(event.key)
        if check is None:
            return
        if event.kind == ALLOW:
            check.admit(event)
            if event.algorithm in LEASE_TIME_ALGORITHMS:
                self.book.join(event.at_ms, scope.last_acquired, event.operation, check)
        else:
            check.denied += 1

    def sync(self, event: Event) -> None:
        """An exchange of an audited hybrid limit: its counter key's windows (hybrid.py)."""
        check = self.hybrids.get(event.key)
        if check is None:
            sink = self.shadow_over if event.shadow else self.violations
            check = self.hybrids[event.key] = HybridCheck(event, sink)
        check.report(event)

    def acquire(self, event: Event) -> None:
        """An acquire (logged once per lease, on its lease set's limit) or a renewal (without the limit's figures)."""
        scope = self.customers.get(event.customer) or self.customer(event.customer)
        at = event.at_ms
        if event.kind == ACQUIRE:
            if event.limit not in scope.seen:
                self.note(scope, event)
            scope.last_acquired = event.lease
        else:
            self.book.renewed(at, event.lease)
        check = self.checks.get(event.key) if event.algorithm in LEASED_ALGORITHMS else None
        if check is not None:
            check.admission(at)
            if event.kind == ACQUIRE:
                check.admitted += 1
        self.book.acquire(at, event.lease, event.expires_ms, scope, event.operation, check)

    def customer(self, name: str) -> Scope:
        group = None
        group_name = self.group_of.get(name)
        if group_name is not None:
            group = self.groups.get(group_name)
            if group is None:
                group = self.groups[group_name] = Scope(group_name)
            group.members += 1
        scope = self.customers[name] = Scope(name, group)
        return scope

    def note(self, scope: Scope, event: Event) -> None:
        """The first event carrying this limit's figures (a decision or an acquire) for this customer: its
        tracker, and the terms of the customer's score."""
        scope.seen.add(event.limit)
        if event.key not in self.checks:
            self.checks[event.key] = self.new_check(event)
        algorithm = event.algorithm
        if algorithm in LEASE_SET_ALGORITHMS and not scope.lease_allowance:
            scope.lease_allowance = event.quantity
        elif algorithm in LEASE_TIME_ALGORITHMS and scope.session_check is None:
            scope.session_check = self.checks[event.key]
        elif algorithm in OPENING_ALGORITHMS:
            for owner in (scope, scope.group):
                if owner is not None:
                    owner.openings.note_limit(event.limit, event.operation, event.period_ms, event.quantity)

    def new_check(self, event: Event) -> Check | None:
        kind = CHECKS.get(event.algorithm)
        if kind is None:
            self.skip(f"algorithm {event.algorithm!r}")
            return None
        if event.algorithm in NEEDS_PERIOD and event.period_ms <= 0:
            self.skip(f"{event.algorithm} without a period")
            return None
        return kind(event, self.shadow_over if event.shadow else self.violations)

    def finish(self, count: int, top: int) -> AuditReport:
        self.book.close_all(self.last)
        limits = [check.summary() for _, check in sorted(self.checks.items()) if check is not None]
        for _, hybrid in sorted(self.hybrids.items()):
            hybrid.close_all()
            limits.append(hybrid.summary())
            self.skip("hybrid windows unfinished", hybrid.unfinished)
            self.skip("sync reports of a window already checked", hybrid.late)
        limits.sort(key=lambda limit: (limit.key, limit.mode))
        customers = {name: scope.summary() for name, scope in sorted(self.customers.items())}
        groups = {name: scope.summary() for name, scope in sorted(self.groups.items())}
        return AuditReport(
            events=count,
            from_ms=self.first,
            to_ms=self.last if self.first is not None else None,
            violations=sorted(self.violations, key=lambda v: v.at_ms),
            shadow_over=sorted(self.shadow_over, key=lambda v: v.at_ms),
            unchecked=dict(sorted(self.unchecked.items())),
            limits=limits,
            customers=customers,
            groups=groups,
            top_customers=ranking(customers, top),
            top_groups=ranking(groups, top),
        )


def ranking(scopes: Mapping[str, ScopeSummary], top: int) -> list[Top]:
    """The highest peak monopolization first (then the most session time, then the name)."""
    tops = [
        Top(name, scope.monopolization.peak, scope.monopolization.peak_at_ms, scope.session_ms)
        for name, scope in scopes.items()
        if scope.monopolization.peak_at_ms is not None
    ]
    tops.sort(key=lambda item: (-item.score, -item.session_ms, item.name))
    return tops[:top]
