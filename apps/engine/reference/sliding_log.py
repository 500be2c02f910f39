"""Sliding log: every admitted check is logged with its time and cost; the checks logged in
(now - period, now] may cost at most `quantity` in total. Exact: no interval of length period
admits more than quantity. Memory: one entry per admitted check (at most `quantity` entries).

State: (entries, total) with entries ((time_ms, cost), ...) oldest first.
"""

from __future__ import annotations

from apps.engine.reference.base import Params

Entry = tuple[int, int]
State = tuple[tuple[Entry, ...], int]
EMPTY: State = ((), 0)


def live(state: State | None, period: int, now: int) -> State:
    """The entries still inside the sliding window at `now`."""
    if state is None:
        return EMPTY
    entries, total = state
    cutoff = now - period
    dropped = 0
    while dropped < len(entries) and entries[dropped][0] <= cutoff:
        total -= entries[dropped][1]
        dropped += 1
    return (entries[dropped:], total) if dropped else state


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the logged total leaves room; otherwise retry when enough old entries slide out."""
    if cost > params.quantity:
        return False, None
    entries, total = live(state, params.period_ms, now)
    need = total + cost - params.quantity
    if need <= 0:
        return True, 0
    freed = 0
    for at, spent in entries:
        freed += spent
        if freed >= need:
            return False, at + params.period_ms - now
    raise AssertionError("a live log always frees enough")  # pragma: no cover


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Log `cost` at `now`."""
    entries, total = live(state, params.period_ms, now)
    return (*entries, (now, cost)), total + cost


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Room left in the window, and milliseconds until the newest entry slides out."""
    entries, total = live(state, params.period_ms, now)
    reset = entries[-1][0] + params.period_ms - now if entries else 0
    return max(0, params.quantity - total), reset


def expires_at(state: State, params: Params, now: int) -> int:
    """When the newest entry slides out."""
    entries = state[0]
    return entries[-1][0] + params.period_ms if entries else now
