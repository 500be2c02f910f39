"""The store's side of hybrid counting (seed 004): what an exchange answers, and MemoryPeers, the reference model of
apps/engine/lua/hybrid_sync.lua (the simulations' store, and the embedded default's). Pure: the clock is injected.
quota_client.hybrid (HybridCounter, the instance's side) re-exports these names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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


# The store's bounds (hybrid_sync.lua reads them from its caller; docs/hybrid.md, "What a report can change"):
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


def saturated(value: int) -> int:
    """`value` held to [0, SATURATED]."""
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
        return Exchanged(saturated(others), saturated(others_prev), live, mine is None)

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
            counter.floors[window] = (saturated(max(held, amount)), now)


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
        sums[key] = _Sum(saturated(held.count + count), saturated(held.post + post), now)


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
