"""What every reference model shares: its parameters and exact integer helpers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Params:
    """A limit's numbers as the algorithms see them.

    quantity: units per period; period_ms: the period (0 for calendar and concurrency);
    capacity: the most one check may spend (bucket burst, else quantity);
    window: calendar only, the [start, end) window containing now.
    """

    quantity: int
    period_ms: int
    capacity: int
    window: tuple[int, int] = (0, 0)


def ceil_div(numerator: int, denominator: int) -> int:
    """Exact ceiling of numerator / denominator (denominator > 0)."""
    return -(-numerator // denominator)


def window_current(state: tuple[int, int] | None, start: int) -> tuple[int, int]:
    """A window counter's state, (window start ms, used), as seen in the window starting at `start`: a later
    window starts at zero; if the clock steps back, the newer stored window is kept so nothing counts twice."""
    if state is None or state[0] < start:
        return (start, 0)
    return state
