"""From a limit in the config snapshot to what the engine evaluates."""

import functools

from apps.engine import LimitSpec
from apps.limits.models import Mode
from apps.limits.snapshot import LimitConfig

CALENDAR_WINDOW_S = {"day": 86400, "week": 604800, "month": 2592000}


@functools.lru_cache(maxsize=8192)
def limit_spec_of(config: LimitConfig) -> LimitSpec:
    return LimitSpec(
        name=config.name,
        algorithm=config.algorithm,
        quantity=config.quantity,
        period_s=config.period_s,
        calendar_period=config.calendar_period,
        burst=config.burst,
        unit=config.unit,
        key_by=config.key_by,
        shadow=config.mode == Mode.SHADOW,
    )


def window_seconds(config: LimitConfig) -> int:
    return CALENDAR_WINDOW_S[config.calendar_period] if config.calendar_period else config.period_s or 0
