"""GCRA, the generic cell rate algorithm, as redis-cell and Stripe run it: `quantity` per `period` with `burst`.

One timestamp per key: the theoretical arrival time (TAT), when the counter would be back to empty. Each unit
of cost moves the TAT by the emission interval (period / quantity); a check of `cost` passes when the TAT it
would leave is at most `burst` emission intervals ahead of now, i.e. when max(TAT, now) + cost x interval -
burst x interval <= now. A cost above the burst never passes (None).

The interval is rarely a whole number of milliseconds, so the TAT is kept exactly as whole milliseconds and a
remainder in 1/quantity of a millisecond: State (tat_ms, frac), TAT = tat_ms + frac / quantity, 0 <= frac.
Every step works on how far the TAT is ahead of now in 1/quantity ms (`ahead`): one unit of cost is
period_ms of them, so the arithmetic is integer and the Lua fragment (gcra.lua) does the same.

A change of the limit keeps the TAT, as redis-cell does: what is owed is time, re-read at the new rate (a slower
rate owes fewer units, a faster one more). Each configuration's admissions keep its own bound; a token bucket
keeps its level in units instead.
"""

from __future__ import annotations

from apps.engine.reference.base import Params, ceil_div

State = tuple[int, int]


def ahead(state: State | None, params: Params, now: int) -> int:
    """How far the TAT is ahead of `now`, in 1/quantity ms (0 when it has passed)."""
    if state is None:
        return 0
    tat_ms, frac = state
    return max(0, (tat_ms - now) * params.quantity + frac)


def at(now: int, params: Params, units_ahead: int) -> State:
    """The state whose TAT is `units_ahead` (1/quantity ms) after `now`."""
    whole, frac = divmod(units_ahead, params.quantity)
    return (now + whole, frac)


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the TAT after `cost` stays within the burst; otherwise retry once it would."""
    if cost > params.capacity:
        return False, None
    excess = ahead(state, params, now) + (cost - params.capacity) * params.period_ms
    if excess <= 0:
        return True, 0
    return False, ceil_div(excess, params.quantity)


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """The TAT moved on by `cost` emission intervals from max(TAT, now)."""
    return at(now, params, ahead(state, params, now) + cost * params.period_ms)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """(whole units that would pass now, ms until the TAT is reached: back to a full burst)."""
    units = ahead(state, params, now)
    return max(0, params.capacity * params.period_ms - units) // params.period_ms, ceil_div(units, params.quantity)


def expires_at(state: State, params: Params, now: int) -> int:
    """The TAT, rounded up to the millisecond: from then on the state means no state at all."""
    tat_ms, frac = state
    return tat_ms + (1 if frac > 0 else 0)
