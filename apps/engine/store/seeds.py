"""Rebuilt counters in the form check.lua writes back: "<ttl ms>|<state>" (see its header and durability.py).

The state is the counter's value as the algorithm's fragment stores it:
    fixed window, calendar  "<window start ms>:<used>"
    sliding window          "<window start ms>:<current>:<previous>"
    sliding log             "<time ms>:<cost>,..." oldest first (the script writes the set and its sum)
    token / leaky bucket    "<level>:<last ms>:<empty at ms>"
An empty state ("") writes nothing: the counter starts empty, as a counter nobody used.
"""

from __future__ import annotations

from typing import Any

from apps.engine.durability import History, rebuild
from apps.engine.reference import sliding_log
from apps.engine.reference.base import Params, ceil_div
from apps.engine.registry import ALGORITHMS
from apps.engine.types import BUCKETS, CALENDAR, FIXED_WINDOW, SLIDING_LOG, SLIDING_WINDOW, LimitSpec


def seed_text(spec: LimitSpec, params: Params, history: History, now: int) -> str:
    """What check.lua writes for a counter of `spec` rebuilt at `now` from `history`."""
    state = rebuild(spec, params, history, now)
    if spec.algorithm == SLIDING_LOG and state is not None:
        state = sliding_log.live(state, params.period_ms, now)
    if state is None or state == sliding_log.EMPTY:
        return "0|"
    ttl = max(1, ALGORITHMS[spec.algorithm].model.expires_at(state, params, now) - now)
    return f"{ttl}|{_stored(spec, state, params)}"


def _stored(spec: LimitSpec, state: Any, params: Params) -> str:
    if spec.algorithm in (FIXED_WINDOW, CALENDAR):
        start, used = state
        return f"{start}:{used}"
    if spec.algorithm == SLIDING_WINDOW:
        start, current, previous = state
        return f"{start}:{current}:{previous}"
    if spec.algorithm == SLIDING_LOG:
        entries, _ = state
        return ",".join(f"{at}:{cost}" for at, cost in entries)
    if spec.algorithm in BUCKETS:
        level, last = state
        return f"{level}:{last}:{last + ceil_div(level, params.quantity)}"
    raise ValueError(f"{spec.algorithm} counters are not durable")
