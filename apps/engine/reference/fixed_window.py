"""Fixed window: at most `quantity` units per epoch-aligned window of `period_ms`.

State: (window_start_ms, used). A window later than the stored one starts at zero; if the clock
steps back, the newer stored window is kept so nothing is counted twice.
"""

from __future__ import annotations

from apps.engine.reference.base import Params, window_current

State = tuple[int, int]


def window_start(params: Params, now: int) -> int:
    """Start of the epoch-aligned window containing `now`."""
    return now - now % params.period_ms


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the window still has `cost` units; otherwise retry at the next window."""
    if cost > params.quantity:
        return False, None
    start, used = window_current(state, window_start(params, now))
    if used + cost <= params.quantity:
        return True, 0
    return False, start + params.period_ms - now


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Add `cost` to the current window."""
    start, used = window_current(state, window_start(params, now))
    return (start, used + cost)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Units left in the window and milliseconds until it ends."""
    start, used = window_current(state, window_start(params, now))
    return max(0, params.quantity - used), start + params.period_ms - now


def expires_at(state: State, params: Params, now: int) -> int:
    """The window's end: afterwards the stored count no longer matters."""
    return state[0] + params.period_ms
