"""What the bucket algorithms share: their validation and their durability (a level that drains at the rate).

A bucket's level carries its whole past (a bucket kept full for hours still is), so its replay starts from a
full bucket at the look-back start, two drain times back: never below the true level, and equal to it as
soon as the true level touched zero in the last drain time (the assumed fill has drained by then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from apps.engine.algorithms.base import Durability
from apps.engine.reference.base import Params, ceil_div
from apps.engine.types import MAX_SAFE_INT, MINUTE_MS

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec

# A bucket's highest level above its capacity (meter units), e.g. what a shaper's waiting checks queue.
Queued = Callable[["LimitSpec"], int]


def no_queue(spec: LimitSpec) -> int:
    return 0


def check_bucket(spec: LimitSpec) -> str | None:
    """A bucket's numbers must stay exact in Lua: levels are kept in 1/period_ms units of a unit."""
    if spec.quantity < 1:
        return "a bucket needs a rate of at least 1 per period"
    if max(spec.capacity, spec.quantity) * spec.period_ms > MAX_SAFE_INT:
        return "burst x period (ms) exceeds 2**53; use a shorter period or a window algorithm"
    return None


def full_level(spec: LimitSpec, queued: Queued = no_queue) -> int:
    """The highest level (1/period_ms units): the capacity, and what may queue above it."""
    return spec.capacity * spec.period_ms + queued(spec)


def drain_ms(spec: LimitSpec, queued: Queued = no_queue) -> int:
    """How long a full bucket takes to drain empty (a bucket looks back twice as far)."""
    return ceil_div(full_level(spec, queued), spec.quantity)


def _minute(spec: LimitSpec, params: Params, now: int) -> int:
    return now - now % MINUTE_MS


def level_stored(state: Any, params: Params) -> str:
    """meter.lua's "<level>:<last ms>:<empty at ms>"."""
    level, last = state
    return f"{level}:{last}:{last + ceil_div(level, params.quantity)}"


def bucket_durability(
    full_state: Callable[[LimitSpec, int, int], Any],
    stored: Callable[[Any, Params], str] = level_stored,
    queued: Queued = no_queue,
) -> Durability:
    """Recorded per minute, looked back two drain times, replayed from a full bucket (`full_state(spec,
    level, since)` builds the algorithm's state holding `level` at `since`)."""
    return Durability(
        windowed=False,
        record_bucket=_minute,
        lookback_start=lambda spec, params, now: now - 2 * drain_ms(spec, queued),
        reach_ms=lambda spec: MINUTE_MS + 2 * drain_ms(spec, queued),
        stored=stored,
        replay_from=lambda spec, since: full_state(spec, full_level(spec, queued), since),
    )
