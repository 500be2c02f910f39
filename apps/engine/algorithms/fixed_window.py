"""Fixed window: at most `quantity` per epoch-aligned window of `period_s`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.algorithms.base import PERIOD_SECONDS, Algorithm, Durability, window_stored
from apps.engine.reference import fixed_window as model
from apps.engine.reference.base import Params

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec


def _window_start(spec: LimitSpec, params: Params, now: int) -> int:
    return now - now % spec.period_ms


ENTRY = Algorithm(
    name="fixed_window",
    label="fixed window",
    code="fw",
    model=model,
    fragments=("fixed_window.lua",),
    period="seconds",
    params=(PERIOD_SECONDS,),
    durability=Durability(
        windowed=True,
        record_bucket=_window_start,
        lookback_start=_window_start,
        reach_ms=lambda spec: spec.period_ms,
        stored=window_stored,
    ),
    refund=True,
    hybrid="fixed",
    audit="window",
    summary="counts per window of the period, starting at zero at each window's start",
)
