"""Sliding window counter: the current window's count plus the previous one's, weighted by their overlap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apps.engine.algorithms.base import PERIOD_SECONDS, Algorithm, Durability
from apps.engine.reference import sliding_window as model
from apps.engine.reference.base import Params

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec


def _window_start(spec: LimitSpec, params: Params, now: int) -> int:
    return now - now % spec.period_ms


def _stored(state: Any, params: Params) -> str:
    start, current, previous = state
    return f"{start}:{current}:{previous}"


ENTRY = Algorithm(
    name="sliding_window",
    label="sliding window",
    code="swc",
    model=model,
    fragments=("sliding_window.lua",),
    period="seconds",
    params=(PERIOD_SECONDS,),
    durability=Durability(
        windowed=True,
        record_bucket=_window_start,
        lookback_start=lambda spec, params, now: _window_start(spec, params, now) - spec.period_ms,
        reach_ms=lambda spec: 2 * spec.period_ms,
        stored=_stored,
    ),
    refund=True,
    hybrid="sliding",
    audit="sliding_counter",
    summary="estimates the last period from this window's count and the previous one's",
)
