"""Calendar quota: at most `quantity` per day, week or month in the customer's time zone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.algorithms.base import Algorithm, Durability, Param, window_stored
from apps.engine.reference import calendar as model
from apps.engine.reference.base import Params
from apps.engine.types import CALENDAR_PERIODS

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec

DAY_MS = 86_400_000
# The longest calendar window, with a daylight-saving hour to spare.
LONGEST_MS = {"day": DAY_MS + 3_600_000, "week": 7 * DAY_MS + 3_600_000, "month": 31 * DAY_MS + 3_600_000}


def _window_start(spec: LimitSpec, params: Params, now: int) -> int:
    return params.window[0]


ENTRY = Algorithm(
    name="calendar",
    label="calendar",
    code="cal",
    model=model,
    fragments=("calendar.lua",),
    period="zoned",
    params=(
        Param(
            "calendar_period",
            "Only for the calendar algorithm (<code>period: day|week|month</code> in limits.yaml).",
            choices=CALENDAR_PERIODS,
        ),
    ),
    durability=Durability(
        windowed=True,
        record_bucket=_window_start,
        lookback_start=_window_start,
        reach_ms=lambda spec: LONGEST_MS[spec.calendar_period or "month"],
        stored=window_stored,
    ),
    refund=True,
    hybrid="fixed",
    audit="window",
    summary="counts per day, week or month in the customer's time zone",
)
