"""Admissions per window from the servers' decision times, the bound docs/hybrid.md states, and a replay of the
exchanges Redis ran (what the store answered each instance, as hybrid_sync.lua computes it)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tests.enforcement.hybrid.load import Answer, Exchange

SYNC_MS = 100
TICK_MS = 50  # apps/enforcement/hybrid.TICK_S: a quiet counter's exchange may come this much after it is due
# An admission reaches another instance's view within two intervals (docs/hybrid.md), each exchange up to one tick
# late on a real server (the timer looks every TICK_MS): the lag the bound is evaluated with.
LAG_MS = 2 * SYNC_MS + 2 * TICK_MS


@dataclass(frozen=True)
class Window:
    start: int
    admitted: int
    recent: int  # every instance's admissions in the lag before the window's last admission (A in the bound)
    limit: int
    lag_ms: int = LAG_MS

    @property
    def bound(self) -> int:
        """limit + A(lag). A counts every instance's admissions, "this" one's too: at least the docs' A (the
        others' only), so this is the documented bound or looser, never tighter."""
        return self.limit + self.recent

    def __str__(self) -> str:
        bound = f"bound {self.bound} (limit {self.limit} + A {self.recent} in {self.lag_ms} ms)"
        return f"window {self.start}: admitted {self.admitted} <= {bound}"


def admissions(answers: Sequence[Answer], window_ms: int) -> dict[int, list[int]]:
    """Window start -> the server decision times (ms) of the admissions in it (each one checked to fall between
    the request's send and its answer: a reading a window off, as decided_ms once made, fails here)."""
    found: dict[int, list[int]] = defaultdict(list)
    for answer in answers:
        if answer.admitted:
            at = answer.decided_ms(window_ms)
            assert answer.sent * 1000 - 1 < at <= answer.done * 1000, (answer, at)
            found[at - at % window_ms].append(at)
    return found


def full_windows(
    answers: Sequence[Answer], window_ms: int, limit: int, exchanges: Sequence[Exchange] = ()
) -> list[Window]:
    """Every window the load covered from start to end, with its admissions and bound. With `exchanges`, the lag
    is twice the longest time an instance went without an exchange Redis ran in that window, when longer than
    LAG_MS (docs/hybrid.md's bound assumes exchanges on time; a starved worker or a timed-out call delays one)."""
    first = min(answer.sent for answer in answers) * 1000
    last = max(answer.sent for answer in answers) * 1000
    windows = []
    for start, times in sorted(admissions(answers, window_ms).items()):
        if start >= first and start + window_ms <= last:
            latest = max(times)
            lag = max(LAG_MS, 2 * longest_gap_ms(exchanges, start, latest))
            windows.append(Window(start, len(times), before_last(times, lag), limit, lag))
    return windows


def before_last(times: Sequence[int], lag: int) -> int:
    """How many of `times` fall in the last `lag` ms up to the latest of them: A(lag) of docs/hybrid.md's bound,
    anchored at the window's last admission (every instance's admissions, so the bound is the docs' or looser)."""
    latest = max(times)
    return sum(1 for at in times if at > latest - lag)


def admitted_in(answers: Sequence[Answer], window_ms: int, start: int, after_ms: float = 0) -> int:
    return sum(1 for at in admissions(answers, window_ms).get(start, []) if at > after_ms)


@dataclass(frozen=True)
class Answered:
    """What the store answered one exchange: the others' counts in its window and in the one before."""

    exchange: Exchange
    others: int
    others_prev: int


def replay(exchanges: Sequence[Exchange], window_ms: int) -> list[Answered]:
    """Run the exchanges in Redis's order through the store's rule (hybrid_sync.lua, within the retention)."""
    stored: dict[str, dict[str, Exchange]] = defaultdict(dict)
    answered = []
    for exchange in exchanges:
        others = others_prev = 0
        for name, entry in stored[exchange.key].items():
            if name == exchange.instance:
                continue
            if entry.start == exchange.start:
                others, others_prev = others + entry.own, others_prev + entry.own_prev
            elif entry.start == exchange.start - window_ms:
                others_prev += entry.own
        answered.append(Answered(exchange, others, others_prev))
        stored[exchange.key][exchange.instance] = exchange
    return answered


def last_report(exchanges: Sequence[Exchange], before: float, start: int) -> dict[str, int]:
    """Each instance's own count in the window `start` at its last exchange before `before` (epoch s)."""
    found: dict[str, int] = {}
    for exchange in exchanges:
        if exchange.at < before and exchange.start == start:
            found[exchange.instance] = exchange.own
    return found


def per_instance(exchanges: Sequence[Exchange], since: float, until: float) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for exchange in exchanges:
        if since <= exchange.at <= until:
            counts[exchange.instance] += 1
    return dict(counts)


def longest_gap_ms(exchanges: Sequence[Exchange], start: int, until: int) -> int:
    """The longest time between two exchanges of one instance (Redis's clock) from `start` to `until` (ms)."""
    times: dict[str, list[float]] = defaultdict(list)
    for exchange in exchanges:
        if start <= exchange.at * 1000 <= until + SYNC_MS:
            times[exchange.instance].append(exchange.at * 1000)
    gaps = [later - earlier for seen in times.values() for earlier, later in zip(seen, seen[1:], strict=False)]
    return int(max(gaps, default=0))
