"""Sliding log: every admitted cost with its time; at most `quantity` in any interval of `period_s`.

Two keys: the log (a sorted set) and its running sum (extra key suffix ".s").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apps.engine.algorithms.base import PERIOD_SECONDS, Algorithm, Durability
from apps.engine.reference import sliding_log as model
from apps.engine.reference.base import Params
from apps.engine.types import MINUTE_MS

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec


def _minute(spec: LimitSpec, params: Params, now: int) -> int:
    return now - now % MINUTE_MS


def _stored(state: Any, params: Params) -> str:
    entries, _ = state
    return ",".join(f"{at}:{cost}" for at, cost in entries)


def _live(state: Any, params: Params, now: int) -> Any:
    """The entries still in the log at `now`; None when none is (nothing to write)."""
    state = model.live(state, params.period_ms, now)
    return None if state == model.EMPTY else state


ENTRY = Algorithm(
    name="sliding_log",
    label="sliding log",
    code="sl",
    model=model,
    fragments=("sliding_log.lua",),
    period="seconds",
    params=(PERIOD_SECONDS,),
    durability=Durability(
        windowed=False,
        record_bucket=_minute,
        lookback_start=lambda spec, params, now: now - spec.period_ms,
        reach_ms=lambda spec: MINUTE_MS + spec.period_ms,
        stored=_stored,
        live=_live,
    ),
    refund=True,
    hybrid=None,
    audit="log",
    extra_keys=(".s",),
    summary="exact: at most the limit in any interval of the period",
)
