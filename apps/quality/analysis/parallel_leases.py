"""Parallel sessions over time, from acquire / renew / release / expire events, in one pass without sorting.

A lease is held over [acquired, ended): it ends at its release, or at its last expiry (`expires_ms` of the
last acquire or renew) when no release came before, so a crashed holder stops counting on its own. Expiries
are not events of the log (the store notices them lazily, if ever), so the audit keeps the pending expiries
of the live leases in one heap keyed by expiry and, before each event at t, ends every lease whose expiry is
<= t, in expiry order. That is O(n log k) for k live leases (a renewal leaves its old heap entry behind, skipped
when popped), not a sort of the log: with k bounded by the concurrency limits, it is linear in practice.

Level counts leases held over time from changes fed in time order. A change at t closes the segment
[since, t) at the level it had; several changes at the same millisecond therefore count once, after all of them
(a release and an acquire in the same millisecond do not make one more parallel session). It keeps the
maximum, the longest stretch at that maximum (its start and length), and the integral (lease milliseconds).
"""

from __future__ import annotations

import heapq
from typing import Any


class Level:
    """A count over time with its maximum, the longest stretch at it, and its integral (value x ms)."""

    __slots__ = ("area", "level", "max_at", "max_duration", "max_value", "run_level", "run_start", "since")

    def __init__(self) -> None:
        self.level = 0
        self.since: int | None = None
        self.area = 0
        self.max_value = 0
        self.max_at: int | None = None
        self.max_duration = 0
        self.run_level = 0
        self.run_start = 0

    def change(self, at: int, delta: int) -> None:
        since = self.since
        if since is not None and at > since:
            self.close(since, at)
        if since is None or at > since:
            self.since = at
        self.level += delta

    def close(self, start: int, end: int) -> None:
        """The level held over [start, end)."""
        level = self.level
        if level == 0:
            self.run_level = 0
            return
        self.area += level * (end - start)
        if level != self.run_level:
            self.run_level, self.run_start = level, start
        run_start = self.run_start
        if level > self.max_value or (level == self.max_value and run_start == self.max_at):
            self.max_value, self.max_at, self.max_duration = level, run_start, end - run_start
        elif level == self.max_value and end - run_start > self.max_duration:
            self.max_at, self.max_duration = run_start, end - run_start


class Lease:
    """One live lease: who holds it, until when, and the per-limit trackers counting it."""

    __slots__ = ("checks", "expires", "operation", "owner", "started")

    def __init__(self, owner: Any, expires: int, started: int, operation: str) -> None:
        self.owner = owner
        self.expires = expires
        self.started = started
        self.operation = operation
        self.checks: list[Any] = []


class LeaseBook:
    """The live leases by member, and the heap of their pending expiries.

    `owner` objects (the customer's figures) get start(at, operation) and end(at); `checks` (per-limit
    trackers) get lease_start(at) and lease_end(at).
    """

    __slots__ = ("heap", "live", "seq")

    def __init__(self) -> None:
        self.live: dict[str, Lease] = {}
        self.heap: list[tuple[int, int, str]] = []
        self.seq = 0

    def _push(self, expires: int, member: str) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (expires, self.seq, member))

    def acquire(self, at: int, member: str, expires: int, owner: Any, operation: str, check: Any) -> None:
        """A lease acquired (or renewed: a renewal of a lease not seen live starts it now)."""
        lease = self.live.get(member)
        expires = max(expires, at) if expires else 0
        if lease is None:
            lease = self.live[member] = Lease(owner, expires, at, operation)
            if expires:
                self._push(expires, member)
            owner.start(at, operation)
        elif expires and expires != lease.expires:
            lease.expires = expires
            self._push(expires, member)
        if check is not None and check not in lease.checks:
            lease.checks.append(check)
            check.lease_start(at)

    def join(self, at: int, member: str | None, operation: str, check: Any) -> None:
        """A session_time limit allowed the acquisition of `member` at `at` (its decision follows the acquire,
        logged on the concurrency limit, in the same script call): the lease counts for it from now."""
        lease = self.live.get(member) if member is not None else None
        if lease is not None and lease.started == at and lease.operation == operation and check not in lease.checks:
            lease.checks.append(check)
            check.lease_start(at)

    def renewed(self, at: int, member: str) -> None:
        """A renewal is judged by the lease's session_time limits: each checks it as an admission."""
        lease = self.live.get(member)
        if lease is not None:
            for check in lease.checks:
                check.admission(at)

    def end(self, at: int, member: str) -> None:
        """Released or noticed expired at `at` (an unknown or already ended lease: nothing)."""
        lease = self.live.pop(member, None)
        if lease is not None:
            self._ended(lease, at)

    def expire_until(self, now: int) -> None:
        """End, in expiry order, every live lease whose last expiry is <= now."""
        heap, live = self.heap, self.live
        while heap and heap[0][0] <= now:
            expires, _, member = heapq.heappop(heap)
            lease = live.get(member)
            if lease is not None and lease.expires == expires:
                del live[member]
                self._ended(lease, expires)

    def close_all(self, last: int) -> None:
        """At the end of the log: every lease ends at its expiry; one without a known expiry at `last`."""
        self.expire_until(max([last, *(entry[0] for entry in self.heap)]))
        for member in list(self.live):
            self.end(last, member)

    @staticmethod
    def _ended(lease: Lease, at: int) -> None:
        for check in lease.checks:
            check.lease_end(at)
        lease.owner.end(at)
