"""Sliding window counter: the previous window's count, weighted by how much of it still overlaps
the sliding window, plus the current window's count.

    estimate(now) = floor(previous * (period - elapsed) / period) + current

The weight is computed in IEEE doubles in exactly this order (multiply, then divide, then floor),
which is what the Lua fragment does, so both agree bit for bit. The estimate never increases while
time passes, so retry_after is found exactly by a binary search over milliseconds.
State: (window_start_ms, current, previous).
"""

from __future__ import annotations

import math

from apps.engine.reference.base import Params

State = tuple[int, int, int]


def roll(state: State | None, period: int, now: int) -> State:
    """The state as seen at `now`: the current window moved into `previous` when a window passed."""
    start = now - now % period
    if state is None:
        return (start, 0, 0)
    stored, current, _ = state
    if stored >= start:
        return state
    if stored == start - period:
        return (start, 0, current)
    return (start, 0, 0)


def estimate(state: State, period: int, now: int) -> int:
    """The weighted count at `now` of a rolled state."""
    start, current, previous = state
    elapsed = max(0, now - start)
    return math.floor(float(previous) * float(period - elapsed) / period) + current


def _admits_at(state: State | None, params: Params, at: int, cost: int) -> bool:
    rolled = roll(state, params.period_ms, at)
    return estimate(rolled, params.period_ms, at) + cost <= params.quantity


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the estimate leaves room for `cost`; retry at the first millisecond it does."""
    if cost > params.quantity:
        return False, None
    if _admits_at(state, params, now, cost):
        return True, 0
    low, high = now, now + 2 * params.period_ms
    while high - low > 1:
        middle = (low + high) // 2
        if _admits_at(state, params, middle, cost):
            high = middle
        else:
            low = middle
    return False, high - now


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Add `cost` to the current window."""
    start, current, previous = roll(state, params.period_ms, now)
    return (start, current + cost, previous)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Room left under the estimate, and milliseconds until both windows have slid out."""
    rolled = roll(state, params.period_ms, now)
    start, current, previous = rolled
    remaining = max(0, params.quantity - estimate(rolled, params.period_ms, now))
    if current > 0:
        return remaining, start + 2 * params.period_ms - now
    if previous > 0:
        return remaining, start + params.period_ms - now
    return remaining, 0


def expires_at(state: State, params: Params, now: int) -> int:
    """Two windows after the current one started, nothing stored matters any more."""
    return state[0] + 2 * params.period_ms
