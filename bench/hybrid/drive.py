"""One simulated case on a fake clock: N `HybridCounter`s sharing one counter through `MemoryPeers`, each with a
timer that calls `sync_if_due()` at its `next_sync_at` (as tests/clients/test_hybrid.py's `advance` does), fed
one request sequence; and the same sequence against the exact counter of the variant's algorithm (one shared
fixed-window count for fixed, exact mode's sliding window counter for sliding)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from quota_client.hybrid import SLIDING, HybridConfig, HybridCounter, MemoryPeers, fixed_windows

from apps.engine.reference import sliding_window
from bench.hybrid.traffic import Request

RETENTION_WINDOWS = 3  # the store keeps a silent instance's counts this long (never reached here)


@dataclass(frozen=True, slots=True)
class Case:
    n: int
    pattern: str
    load: float
    variant: str
    sync_ms: int


@dataclass(frozen=True, slots=True)
class Outcome:
    hybrid: list[bool]  # per request: admitted by the hybrid counters
    exact: list[bool]  # per request: admitted by the exact counter
    admitted: list[Request]  # the hybrid admissions, (time, instance), in time order
    exact_times: list[int]  # the exact admissions' times
    exchanges: int  # exchanges of all instances, the final window included, nothing after it


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Timers:
    """Each instance's sync timer, fired in time order at its `next_sync_at` (a heap; stale entries skipped)."""

    def __init__(self, group: list[HybridCounter], clock: Clock, window_ms: int) -> None:
        self.group, self.clock, self.window_ms = group, clock, window_ms
        self.due: list[int | None] = [clock.now] * len(group)  # every timer starts now: a first exchange
        self.heap = [(clock.now, i) for i in range(len(group))]

    def advance(self, target: int) -> None:
        """Move the clock to `target`, firing every timer due until then (those due at `target` included)."""
        while self.heap and self.heap[0][0] <= target:
            at, i = heapq.heappop(self.heap)
            if self.due[i] != at:
                continue
            self.clock.now = max(self.clock.now, at)
            self.due[i] = None
            self.group[i].sync_if_due()
            self.reschedule(i)
        self.clock.now = max(self.clock.now, target)

    def reschedule(self, i: int) -> None:
        """Re-arm instance i's timer after it fired or after a request (which can exchange too, moving the timer)."""
        at = self.group[i].next_sync_at
        if at <= self.clock.now:
            # The timer fired and `sync_if_due` skipped (nothing asked or admitted since the last exchange), so
            # `next_sync_at` is already past. Without a request (which re-arms it) the next exchange can only be
            # due at the window's end; re-arming at `next_sync_at` would fire it again at the same time forever.
            at = self.clock.now - self.clock.now % self.window_ms + self.window_ms
        if at != self.due[i]:
            self.due[i] = at
            heapq.heappush(self.heap, (at, i))


def run(case: Case, requests: list[Request], *, limit: int, window_ms: int, start: int, end: int) -> Outcome:
    """Drive the case's instances through `requests` (times in [start, end)) and the exact counter alongside."""
    clock = Clock(start)
    peers = MemoryPeers(retention_ms=RETENTION_WINDOWS * window_ms, clock=clock)
    config = HybridConfig(limit=limit, sync_ms=case.sync_ms, variant=case.variant)
    windows = fixed_windows(window_ms)
    group = [HybridCounter(config, windows, peers.exchange_for("k", f"i{i}"), clock) for i in range(case.n)]
    timers = Timers(group, clock, window_ms)
    hybrid: list[bool] = []
    admitted: list[Request] = []
    for at, who in requests:
        timers.advance(at)
        ok = group[who].try_acquire()
        timers.reschedule(who)
        hybrid.append(ok)
        if ok:
            admitted.append((at, who))
    timers.advance(end - 1)  # the last window's remaining reports; the exchanges at `end` belong to the next
    exact = exact_decisions(requests, limit=limit, window_ms=window_ms, variant=case.variant)
    exact_times = [at for (at, _), ok in zip(requests, exact, strict=True) if ok]
    return Outcome(hybrid, exact, admitted, exact_times, sum(counter.exchanges for counter in group))


def exact_decisions(requests: list[Request], *, limit: int, window_ms: int, variant: str) -> list[bool]:
    """What one shared exact counter with the same limit decides for each request: a fixed-window count, or for
    the sliding variant exact mode's sliding window counter (its reference model)."""
    if variant == SLIDING:
        return sliding_decisions(requests, limit=limit, window_ms=window_ms)
    decisions: list[bool] = []
    window, count = None, 0
    for at, _ in requests:
        if at - at % window_ms != window:
            window, count = at - at % window_ms, 0
        ok = count < limit
        count += ok
        decisions.append(ok)
    return decisions


def sliding_decisions(requests: list[Request], *, limit: int, window_ms: int) -> list[bool]:
    """Exact mode's sliding_window decisions (apps/engine/reference/sliding_window.py; its retry search skipped)."""
    decisions: list[bool] = []
    state: sliding_window.State | None = None
    for at, _ in requests:
        state = sliding_window.roll(state, window_ms, at)
        ok = sliding_window.estimate(state, window_ms, at) + 1 <= limit
        if ok:
            state = (state[0], state[1] + 1, state[2])
        decisions.append(ok)
    return decisions
