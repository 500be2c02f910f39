"""Calendar quota: at most `quantity` units per local day, ISO week or month of a time zone.

The windows come from zoned_windows.py (window_bounds gives the script four boundaries, pick_window the one
containing Redis time). State and decisions are those of a window counter over [start, end) (base.window_current).
"""

from __future__ import annotations

from apps.engine.reference.base import Params, window_current

State = tuple[int, int]


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the window still has `cost` units; otherwise retry when the next window starts."""
    if cost > params.quantity:
        return False, None
    start, end = params.window
    _, used = window_current(state, start)
    if used + cost <= params.quantity:
        return True, 0
    return False, max(1, end - now)


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Add `cost` to the current window."""
    start, used = window_current(state, params.window[0])
    return (start, used + cost)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Units left in the window and milliseconds until it ends."""
    _, used = window_current(state, params.window[0])
    return max(0, params.quantity - used), max(0, params.window[1] - now)


def expires_at(state: State, params: Params, now: int) -> int:
    """The window's end."""
    return params.window[1]
