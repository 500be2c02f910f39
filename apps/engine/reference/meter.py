"""The policing meter shared by the token and leaky buckets.

The level is the consumed amount, kept in units of 1/period_ms of a unit so every step is an
integer: capacity = burst * period_ms, and the level drains `quantity` units per millisecond (the
rate quantity / period). A check of `cost` fits when level + cost * period_ms <= capacity.
Keeping the consumed amount (not the tokens left) means a changed quantity or burst applies to it.
State: (level, last_ms); None = empty (a full bucket of tokens).
"""

from __future__ import annotations

from apps.engine.reference.base import Params, ceil_div

State = tuple[int, int]


def drained(state: State | None, params: Params, now: int) -> State:
    """The level at `now` (never below zero; a clock stepping back drains nothing)."""
    if state is None:
        return (0, now)
    level, last = state
    if now <= last:
        return state
    if now - last >= ceil_div(level, params.quantity):
        return (0, now)
    return (level - (now - last) * params.quantity, now)


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the cost fits under the capacity; otherwise retry once enough has drained."""
    if cost > params.capacity:
        return False, None
    level, _ = drained(state, params, now)
    excess = level + cost * params.period_ms - params.capacity * params.period_ms
    if excess <= 0:
        return True, 0
    return False, ceil_div(excess, params.quantity)


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Pour `cost` into the meter."""
    level, last = drained(state, params, now)
    return (level + cost * params.period_ms, last)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Whole units that fit now, and milliseconds until the meter is empty."""
    level, _ = drained(state, params, now)
    room = params.capacity * params.period_ms - level
    return max(0, room) // params.period_ms, ceil_div(level, params.quantity)


def expires_at(state: State, params: Params, now: int) -> int:
    """When the meter has drained empty."""
    return max(now, state[1]) + ceil_div(state[0], params.quantity)
