"""Hybrid local + global counting (seed 004): each instance decides in-process and exchanges counts with a
shared store once per `sync_ms` and at every window change. Pure: the clock and the exchange are injected.

One `HybridCounter` is one instance's view of one counter (one key of one limit). At time t in window k:

    own      this instance's count in window k (exact, local)
    known    the other instances' counts in window k as the store had them at this instance's last exchange
    prev     the other instances' counts in window k-1 (their totals, from an exchange after k began)
    fixed:   reduction = max(known, prev)                     the seed's "limit minus the others' value",
    sliding: reduction = max(known, prev * left(t) / window)  the seed's linear decay of that value
    admit `cost` when own + reduction + cost <= limit (a cost above the limit never passes)

The exchange is idempotent: it sends this instance's absolute counts for windows k and k-1 (so a retried or
timed-out exchange cannot count twice) and receives the others' sums (hybrid_sync.lua, or MemoryPeers).

Bound (docs/hybrid.md): when every instance reports within `sync_ms` of what it admits (on its next call, or
by a timer calling `sync_if_due`), an instance's knowledge of another lags by at most two sync intervals (the
other's last exchange before this one's, plus the time since this one's), so the admitted total of a window
stays within limit + A(2 * sync_ms), A(d) being what the other instances admit in the last d before the
window's last admission, and never above N * limit for N instances. The sliding variant's reduction is never
below `known`, so the same bound
holds; it refuses less when the traffic moves between instances.

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

import threading
from collections.abc import Callable
from dataclasses import dataclass

FIXED, SLIDING = "fixed", "sliding"


@dataclass(frozen=True, slots=True)
class Exchanged:
    """What the store answers: the others' counts in window k and k-1, live instances (self included), and
    whether it had nothing of this instance before the call (its first exchange, or a store that lost it: every
    instance finds that out by itself, whichever exchanged first after the loss)."""

    others: int
    others_prev: int
    instances: int
    fresh: bool


# exchange(window start, previous window start, own count in the window, own count in the previous one)
Exchange = Callable[[int, int, int, int], Exchanged]
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
            if cost > self.config.limit or self.own + self.reduction(now) + cost > self._own_cap():
                return None
            self.own += cost
            return self._start

    def give_back(self, cost: int, window_start: int) -> None:
        """Undo `take(cost)` made in the window starting at `window_start` (nothing when that window is over)."""
        with self._lock:
            if window_start == self._start:
                self.own = max(0, self.own - cost)

    def status(self) -> tuple[int, int]:
        """(what this instance may still admit now, ms until its window ends), for a check's report."""
        with self._lock:
            now = self._clock()
            self._roll(now)
            return max(0, min(self.config.limit, self._own_cap()) - self.own - self.reduction(now)), self._end - now

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

    def reduction(self, now: int) -> int:
        """What the other instances are taken to hold of the limit now (see the module docstring)."""
        prev = self.prev
        if self.config.variant == SLIDING:
            prev = prev * (self._end - now) // max(1, self._end - self._start)
        value = max(self.known, prev)
        if self._restart is not None:
            windows, peers = self._restart
            floor = self.config.limit * (peers - 1) * (self.config.restart_windows - windows)
            value = max(value, floor // (peers * self.config.restart_windows))
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
        self.known, self.prev = _saturated(answer.others), _saturated(answer.others_prev)
        self._peers_seen, self._last_ok_window = answer.instances, self._start


# The store's bounds (hybrid_sync.lua reads them from its caller; docs/hybrid.md, "What the store keeps"):
MAX_INSTANCES = 256  # instances kept per counter; past it the least recently seen give their counts to the sums
SATURATED = 2**53 - 1  # a sum never goes past it (nor does any count): no wrap, and exact in a double
RESERVED = "~"  # names starting with it are the store's own fields, never an instance's
Recorded = Callable[[int, int], tuple[int, int]]  # (start, previous start) -> what the records hold of each window


@dataclass(slots=True)
class _Entry:
    """One instance's last report. `base` (`base_prev`): its count in its window (in the window before) when it
    first exchanged with a floor of that window in the store; -1 while there is none."""

    window: int
    count: int
    count_prev: int
    seen: int
    base: int = -1
    base_prev: int = -1


@dataclass(slots=True)
class _Sum:
    """What dropped instances had counted in one window (`post`: of it, what they counted after their base)."""

    count: int
    post: int
    seen: int


@dataclass(slots=True)
class _Counter:
    entries: dict[str, _Entry]
    sums: dict[tuple[str, int], _Sum]  # ("c", w): counts in window w; ("p", w): counts in the window before w
    floors: dict[int, tuple[int, int]]  # window start -> (what the records held of it when seeded, seeded at)


def _saturated(value: int) -> int:
    return max(0, min(value, SATURATED))


class MemoryPeers:
    """The store's side of the exchange in memory: the reference model of hybrid_sync.lua (and the store of the
    simulations and of the embedded default). Per counter: each instance's last report (window start, count,
    previous count, seen at, bases), the sums of the instances dropped from the bound, and the floors.

    Bounds (the trust boundary: what callers report is bounded): a count is at most `cap` (the limit's quantity,
    what one instance can admit in a window), a counter keeps at most `max_instances` instances (a new one past
    it drops the least recently seen, whose counts stay in the counter's sums, so dropping changes no answer but
    `instances`), and every sum saturates at SATURATED.

    Floors (a hybrid limit of a minute or longer is durable): when an exchange finds a counter empty although
    the store's epoch (the first time a durable counter was found empty, after creation or `restart`) is later
    than the previous window's start, the store lost what
    the instances had reported; `recorded` then gives what the records (PostgreSQL) hold of both windows, kept as
    the windows' floors. With a floor F of window w, the others' count in w is at least F - (my count when I
    first saw the floor) + (what each other instance counted after it first saw the floor): F holds what everyone
    admitted before the floor was read, mine included, and the rest came after. Both that and the plain sum are
    lower bounds of what the others admitted, so the answer is the larger one and nothing is counted twice."""

    def __init__(self, retention_ms: int, clock: Callable[[], int], max_instances: int = MAX_INSTANCES) -> None:
        self.retention_ms, self._clock, self.max_instances = retention_ms, clock, max_instances
        self._counters: dict[str, _Counter] = {}
        self._epoch: int | None = None  # set when first needed, as the Redis epoch key is: the data start there
        self.calls = 0

    def exchange_for(
        self, key: str, instance: str, *, cap: int = SATURATED, recorded: Recorded | None = None
    ) -> Exchange:
        """The exchange function of `instance` on counter `key` (see `exchange` for `cap` and `recorded`)."""
        return lambda start, prev_start, own, own_prev: self.exchange(
            key, instance, start, prev_start, own, own_prev, cap=cap, recorded=recorded
        )

    def exchange(
        self,
        key: str,
        instance: str,
        start: int,
        prev_start: int,
        own: int,
        own_prev: int,
        *,
        cap: int = SATURATED,
        recorded: Recorded | None = None,
    ) -> Exchanged:
        """Store this instance's counts and answer the others' sums (an instance still in the previous window
        counts toward `others_prev`; one unseen for longer than the retention is forgotten). cap: the most one
        instance can count in a window (counts above are taken as it); recorded: the records of a durable
        counter, asked when the store lost the counter (see the class docstring)."""
        if instance.startswith(RESERVED):
            raise ValueError(f"Instance names starting with {RESERVED!r} are the store's own: {instance!r}")
        self.calls += 1
        now = self._clock()
        own, own_prev = max(0, min(own, cap, SATURATED)), max(0, min(own_prev, cap, SATURATED))
        counter = self._counters.setdefault(key, _Counter({}, {}, {}))
        lost = not self._holds_any(counter, now)
        self._forget(counter, instance, now)
        if recorded is not None and lost and prev_start < self._epoch_now(now):
            floor, floor_prev = recorded(start, prev_start)
            _seed(counter, {start: floor, prev_start: floor_prev}, now)
        mine = counter.entries.get(instance)
        base, base_prev = _bases(mine, counter.floors, start, prev_start, own, own_prev)
        (others, post), (others_prev, post_prev), live = _sums(counter, instance, start, prev_start)
        if start in counter.floors:
            others = max(others, counter.floors[start][0] - base + post)
        if prev_start in counter.floors:
            others_prev = max(others_prev, counter.floors[prev_start][0] - base_prev + post_prev)
        if mine is None and live > self.max_instances:  # the answer stands: the dropped ones' counts stay in sums
            self._bound(counter, live - self.max_instances, now)
            live = self.max_instances
        counter.entries[instance] = _Entry(start, own, own_prev, now, base, base_prev)
        return Exchanged(_saturated(others), _saturated(others_prev), live, mine is None)

    def restart(self) -> None:
        """The store lost everything (a restart without persistence): its epoch starts again at the next call."""
        self._counters.clear()
        self._epoch = None

    def _epoch_now(self, now: int) -> int:
        if self._epoch is None:
            self._epoch = now
        return self._epoch

    def _holds_any(self, counter: _Counter, now: int) -> bool:
        """Does the counter hold anything seen within the retention? (A store that lost it holds nothing; so
        does one whose copy expired, which the retention, shorter than the key's TTL, makes the same.)"""
        seen = [entry.seen for entry in counter.entries.values()] + [held.seen for held in counter.sums.values()]
        seen += [at for _, at in counter.floors.values()]
        return any(now - at <= self.retention_ms for at in seen)

    def _forget(self, counter: _Counter, me: str, now: int) -> None:
        """Drop what was not seen for longer than the retention: other instances, dropped ones' sums, floors."""
        gone = [name for name, entry in counter.entries.items() if name != me and now - entry.seen > self.retention_ms]
        for name in gone:
            del counter.entries[name]
        for key in [key for key, held in counter.sums.items() if now - held.seen > self.retention_ms]:
            del counter.sums[key]
        for window in [window for window, (_, at) in counter.floors.items() if now - at > self.retention_ms]:
            del counter.floors[window]

    @staticmethod
    def _bound(counter: _Counter, excess: int, now: int) -> None:
        """Make room for a newcomer: the `excess` least recently seen instances (ties: by name, bytewise) give
        their counts to the counter's sums (so the others' answers do not change) and are dropped."""
        oldest = sorted(counter.entries.items(), key=lambda item: (item[1].seen, item[0].encode()))[:excess]
        for name, entry in oldest:
            _fold(counter.sums, ("c", entry.window), entry.count, entry.base, now)
            _fold(counter.sums, ("p", entry.window), entry.count_prev, entry.base_prev, now)
            del counter.entries[name]


def _seed(counter: _Counter, floors: dict[int, int], now: int) -> None:
    """Keep what the records hold of each window as its floor (the larger of two seeds; none for nothing)."""
    for window, amount in floors.items():
        held = counter.floors.get(window, (0, now))[0]
        if max(held, amount) > 0:
            counter.floors[window] = (_saturated(max(held, amount)), now)


def _bases(
    mine: _Entry | None, floors: dict[int, tuple[int, int]], start: int, prev_start: int, own: int, own_prev: int
) -> tuple[int, int]:
    """This instance's bases (see _Entry): kept from its last report for the same window, else its count now."""
    base = base_prev = -1
    if start in floors:
        base = mine.base if mine is not None and mine.window == start and mine.base >= 0 else own
    if prev_start in floors:
        if mine is not None and mine.window == start and mine.base_prev >= 0:
            base_prev = mine.base_prev
        elif mine is not None and mine.window == prev_start and mine.base >= 0:
            base_prev = mine.base
        else:
            base_prev = own_prev
    return base, base_prev


def _fold(sums: dict[tuple[str, int], _Sum], key: tuple[str, int], count: int, base: int, now: int) -> None:
    held = sums.get(key, _Sum(0, 0, now))
    post = max(0, count - base) if base >= 0 else 0
    if count or held.count:
        sums[key] = _Sum(_saturated(held.count + count), _saturated(held.post + post), now)


def _sums(counter: _Counter, me: str, start: int, prev_start: int) -> tuple[tuple[int, int], tuple[int, int], int]:
    """((others' counts in my window, of which after their bases), (the same in my previous window), live
    instances with me), the dropped instances' sums included."""
    total = post = total_prev = post_prev = 0
    live = 1
    for name, entry in counter.entries.items():
        if name == me:
            continue
        live += 1
        if entry.window == start:
            total, total_prev = total + entry.count, total_prev + entry.count_prev
            post += max(0, entry.count - entry.base) if entry.base >= 0 else 0
            post_prev += max(0, entry.count_prev - entry.base_prev) if entry.base_prev >= 0 else 0
        elif entry.window == prev_start:
            total_prev += entry.count
            post_prev += max(0, entry.count - entry.base) if entry.base >= 0 else 0
    for (kind, window), held in counter.sums.items():
        if kind == "c" and window == start:
            total, post = total + held.count, post + held.post
        elif (kind == "c" and window == prev_start) or (kind == "p" and window == start):
            total_prev, post_prev = total_prev + held.count, post_prev + held.post
    return (total, post), (total_prev, post_prev), live
