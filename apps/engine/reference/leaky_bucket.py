"""Leaky bucket as a shaper (Sentinel's uniform queueing): admitted requests leave at a constant rate.

The bucket drains `quantity` units per period and holds its capacity (`burst`, default quantity) at once.
The level is the policing meter's (meter.py: the consumed amount in 1/period_ms units of a unit, draining
`quantity` per millisecond), and may rise above the capacity by what is queued: a check of `cost` that does
not fit now would fit once the level has drained to capacity - cost, `delay` ms from now (a request's
departure: the previous one's plus cost / rate). It is admitted when that delay is within the check's
`max_wait_ms`, and answered with the delay to wait before proceeding: its cost joins the level at once, so
the next check queues behind it. With max_wait_ms 0 (the default) the shaper is the policing meter: a check
that does not fit now is refused whole. Nothing ever leaves faster than the rate beyond the capacity's burst.

A refused check may retry after (delay - max_wait_ms) ms, exactly: the delay shrinks one millisecond per
millisecond until the check fits. A cost above the capacity never fits (None).
"""

from __future__ import annotations

from apps.engine.reference.base import Params, ceil_div
from apps.engine.reference.meter import State, consume, drained, expires_at, report

__all__ = ["State", "batch_retry", "consume", "delay", "drained", "evaluate", "expires_at", "need", "report"]


def delay(state: State | None, params: Params, now: int, cost: int) -> int:
    """Milliseconds until `cost` fits under the capacity (0: it fits now); cost <= capacity."""
    level, _ = drained(state, params, now)
    excess = level + cost * params.period_ms - params.capacity * params.period_ms
    return 0 if excess <= 0 else ceil_div(excess, params.quantity)


def evaluate(state: State | None, params: Params, now: int, cost: int, max_wait_ms: int = 0) -> tuple[bool, int | None]:
    """Admit when the cost fits within `max_wait_ms`; otherwise retry once the delay is down to it."""
    if cost > params.capacity:
        return False, None
    wait = delay(state, params, now, cost)
    if wait <= max_wait_ms:
        return True, 0
    return False, wait - max_wait_ms


def need(params: Params, cumulative: int, cost: int, max_wait_ms: int) -> int:
    """A check's need on the level in an atomic batch: the `cumulative` cost up to and including it, less what
    its wait may drain; above the capacity (never) when its own `cost` is."""
    if cost > params.capacity:
        return params.capacity * params.period_ms + 1
    return cumulative * params.period_ms - max_wait_ms * params.quantity


def batch_retry(state: State | None, params: Params, now: int, most: int) -> int | None:
    """When every item of an atomic batch would be admitted, `most` being the largest `need` among them
    (its items' cumulative costs at their places, each less its own max_wait_ms); None when never."""
    if most > params.capacity * params.period_ms:
        return None
    level, _ = drained(state, params, now)
    return max(0, ceil_div(level + most - params.capacity * params.period_ms, params.quantity))
