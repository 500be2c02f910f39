"""Hybrid local + global counting (seed 004): each instance decides in-process and exchanges counts with a
shared store once per `sync_ms` and at every window change. Pure: the clock and the exchange are injected.

One `HybridCounter` is one instance's view of one counter (one key of one limit). At time t in window k:

    own      this instance's count in window k (exact, local)
    own_prev this instance's count in window k-1
    known    the other instances' counts in window k as the store had them at this instance's last exchange
    prev     the other instances' counts in window k-1 (their totals, from an exchange after k began)
    fixed:   reduction = max(known, prev)          the seed's "limit minus the others' value"
    sliding: reduction = known + floor((prev + own_prev) * left(t) / window)
             the seed's linear decay, applied as exact mode's sliding window counter does: the previous
             window's total, this instance's share included, weighted by its overlap with the sliding window
             (apps/engine/reference/sliding_window.py, same operations in doubles), plus this window's
    admit `cost` when own + reduction + cost <= limit (a cost above the limit never passes)

So with one instance, or with every instance's exchange current, the sliding variant decides exactly as exact
counting's `sliding_window` does; otherwise its estimate misses only what the others admitted since the
exchanges it last saw.

The exchange is idempotent: it sends this instance's absolute counts for windows k and k-1 (so a retried or
timed-out exchange cannot count twice) and receives the others' sums (hybrid_sync.lua, or MemoryPeers).

Bound (docs/hybrid.md): when every instance reports within `sync_ms` of what it admits (on its next call, or
by a timer calling `sync_if_due`), an instance's knowledge of another lags by at most two sync intervals (the
other's last exchange before this one's, plus the time since this one's), so the admitted total of a window
stays within limit + A(2 * sync_ms), A(d) being what the other instances admit in the last d before the
window's last admission, and never above N * limit for N instances. The sliding variant's reduction is never
below `known`, so the same bound holds; and at each of its admissions exact mode's sliding-window estimate of
all the instances' counts, the admission included, is at most limit + what the others admitted in the last
2 * sync_ms (docs/hybrid.md, "What the sliding variant guarantees").

Edge cases (the seed's; each has its own test on the fake clock):
- the store times out: the last known values are held (rolled into `prev` at a window change) for
  `hold_windows` windows after the last successful exchange, then ignored (reduction 0);
- an instance is lost: the store keeps each instance's last counts for `retention_ms`, so the others do not
  take its share at once (MemoryPeers / hybrid_sync.lua drop it after that);
- the store restarted (it answers `fresh` although this instance has exchanged before with peers): for
  `restart_windows` windows the reduction is at least limit * (n - 1) / n * (1 - j / restart_windows) in the
  j-th window after the restart, n being the instances seen before it;
  a counter of a minute or longer also starts from its records: the store's floors (MemoryPeers) put what
  the records hold, less this instance's own count, into `others` (nothing to do here);
- this instance restarted (it has no successful exchange yet): its own share ramps up linearly, at most
  limit * (j + 1) / ramp_windows in its j-th window, until the store answers.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from quota_client.hybrid_store import (
    MAX_INSTANCES,
    RESERVED,
    SATURATED,
    Exchange,
    Exchanged,
    MemoryPeers,
    Recorded,
    saturated,
)

# The store's side (MemoryPeers and what it answers) lives in hybrid_store.py; its names are this module's too.
__all__ = [
    "FIXED",
    "MAX_INSTANCES",
    "RESERVED",
    "SATURATED",
    "SLIDING",
    "Exchange",
    "Exchanged",
    "HybridConfig",
    "HybridCounter",
    "MemoryPeers",
    "Recorded",
    "Windows",
    "fixed_windows",
]

FIXED, SLIDING = "fixed", "sliding"


# window(now) -> (start, end) of the window containing now (fixed periods, or calendar windows)
Windows = Callable[[int], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class HybridConfig:
    limit: int
    sync_ms: int
    variant: str = FIXED
    hold_windows: int = 2
    restart_windows: int = 3
    ramp_windows: int = 3


def fixed_windows(period_ms: int) -> Windows:
    """Windows of `period_ms` aligned on the epoch, as fixed_window and sliding_window limits have them."""
    return lambda now: (now - now % period_ms, now - now % period_ms + period_ms)


def weighted(count: int, left: int, window: int) -> int:
    """`count` of the previous window weighted by the part of the sliding window it still covers, `left` ms of a
    `window` of ms: floor(count * left / window) in doubles in exactly this order, as exact counting's sliding
    window counter computes it (apps/engine/reference/sliding_window.py and its Lua), so both agree bit for bit."""
    return math.floor(float(count) * float(max(0, left)) / max(1, window))


class HybridCounter:
    """One instance's decisions on one counter (see the module docstring). Thread-safe."""

    def __init__(self, config: HybridConfig, windows: Windows, exchange: Exchange, clock: Callable[[], int]) -> None:
        self.config, self._windows, self._exchange, self._clock = config, windows, exchange, clock
        self._lock = threading.Lock()
        self._start, self._end, self._prev_start = -1, -1, -1
        self.own = self.own_prev = self.known = self.prev = 0
        self._synced_at: int | None = None  # the last exchange's time (None: never, or not in this window)
        self._last_ok_window = -1  # the start of the window of the last successful exchange
        self._windows_seen = 0  # windows since this instance started (the ramp)
        self._peers_seen = 0  # instances the store reported, self included
        self._restart: tuple[int, int] | None = None  # (windows since the store restart, peers before it)
        self._reported: tuple[int, int, int] | None = None  # (window, own, own_prev) at the last exchange
        self._asked = False  # a decision was asked for since the last exchange
        self.exchanges = 0

    def try_acquire(self, cost: int = 1) -> bool:
        """Admit `cost` now (counting it) or refuse it; exchanges first when an interval or the window ended."""
        return self.take(cost) is not None

    def take(self, cost: int) -> int | None:
        """Like try_acquire, returning the start of the window the cost was counted in (None: refused), which
        `give_back` needs: a caller that must also ask others (exact limits) can undo a reservation."""
        with self._lock:
            now = self._clock()
            self._roll(now)
            self._asked = True
            # Due: a timer (sync_if_due) usually got there first; a decision never uses counts older than that.
            if self._synced_at is None or now - self._synced_at >= self.config.sync_ms:
                self._sync(now)
            if cost > self.config.limit or self.count(now) + cost > self._own_cap():
                return None
            self.own += cost
            return self._start

    def give_back(self, cost: int, window_start: int) -> None:
        """Undo `take(cost)` made in the window starting at `window_start`: off this window's count, or off the
        previous window's when that one just ended (the sliding variant weighs it, the others read it); nothing
        when it is older."""
        with self._lock:
            if window_start == self._start:
                self.own = max(0, self.own - cost)
            elif window_start == self._prev_start:
                self.own_prev = max(0, self.own_prev - cost)

    def status(self) -> tuple[int, int]:
        """(what this instance may still admit now, ms until its window ends), for a check's report."""
        with self._lock:
            now = self._clock()
            self._roll(now)
            return max(0, min(self.config.limit, self._own_cap()) - self.count(now)), self._end - now

    def sync_if_due(self) -> None:
        """Exchange now if an interval or the window ended since the last exchange and this instance admitted
        something since: what a timer calls every `sync_ms`, so an instance that goes quiet still reports what it
        admitted (the bound assumes it), and one that keeps being asked keeps learning the others' counts even
        while it refuses; a counter nobody asks stops exchanging."""
        with self._lock:
            now = self._clock()
            self._roll(now)
            due = self._synced_at is None or now - self._synced_at >= self.config.sync_ms
            if due and (self._asked or (self._start, self.own, self.own_prev) != self._reported):
                self._sync(now)

    @property
    def next_sync_at(self) -> int:
        """When this instance's next exchange is due (its interval, or its window's end): the timer's next time."""
        if self._synced_at is None:
            return self._clock()
        return min(self._synced_at + self.config.sync_ms, self._end)

    def count(self, now: int) -> int:
        """The counter's count as this instance sees it now, what a decision compares with the limit: its own
        count in this window plus the reduction."""
        return self.own + self.reduction(now)

    def reduction(self, now: int) -> int:
        """What the counter holds of the limit now besides this instance's count in this window: the others'
        counts, and for the sliding variant the previous window's total, this instance's included, weighted by
        its overlap (see the module docstring)."""
        own_prev = 0
        if self.config.variant == SLIDING:
            own_prev = weighted(self.own_prev, self._end - now, self._end - self._start)
            value = self.known + weighted(self.prev + self.own_prev, self._end - now, self._end - self._start)
        else:
            value = max(self.known, self.prev)
        if self._restart is not None:  # the others hold at least the restart floor
            windows, peers = self._restart
            floor = self.config.limit * (peers - 1) * (self.config.restart_windows - windows)
            value = max(value, floor // (peers * self.config.restart_windows) + own_prev)
        return value

    def _own_cap(self) -> int:
        if self._last_ok_window >= 0 or self.config.ramp_windows <= 1:
            return self.config.limit
        return self.config.limit * min(self._windows_seen, self.config.ramp_windows) // self.config.ramp_windows

    def _roll(self, now: int) -> None:
        """Enter the window containing `now`: what was the current window becomes the previous one."""
        if self._start <= now < self._end:
            return
        start, end = self._windows(now)
        adjacent = start == self._end
        self.own_prev = self.own if adjacent else 0
        self.prev = self._held_prev(start)
        self._prev_start = self._start if adjacent else start - (end - start)
        self._start, self._end, self.own, self.known, self._synced_at = start, end, 0, 0, None
        self._windows_seen += 1
        if self._restart is not None:
            windows, peers = self._restart
            self._restart = (windows + 1, peers) if windows + 1 < self.config.restart_windows else None

    def _held_prev(self, start: int) -> int:
        """The others' previous-window value to use until the next exchange answers: what the last successful
        exchange said, held for `hold_windows` windows after it (a store outage), then nothing."""
        if self._last_ok_window < 0:
            return 0
        windows = (start - self._last_ok_window) // max(1, self._end - self._start)
        if windows > self.config.hold_windows:
            return 0
        return max(self.known, self.prev) if self._last_ok_window == self._start else self.prev

    def _sync(self, now: int) -> None:
        self._synced_at = now
        self._reported, self._asked = (self._start, self.own, self.own_prev), False
        self.exchanges += 1
        try:
            answer = self._exchange(self._start, self._prev_start, self.own, self.own_prev)
        except Exception:  # noqa: BLE001 - any failure of the store: hold what is known (module docstring)
            return
        # Nothing of this instance stored although it exchanged with peers in this or the last window (too recent
        # for the retention or the store's TTL): the store lost its data.
        recent = self._last_ok_window in (self._start, self._prev_start)
        if answer.fresh and recent and self._peers_seen > 1:
            self._restart = (0, self._peers_seen)
        # Whatever the store answers, a count is a whole number in [0, SATURATED] (the store saturates its sums).
        self.known, self.prev = saturated(answer.others), saturated(answer.others_prev)
        self._peers_seen, self._last_ok_window = answer.instances, self._start
