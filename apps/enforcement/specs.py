"""From a limit in the config snapshot to what the engine evaluates."""

import functools

from apps.engine import LimitSpec
from apps.limits.models import Algorithm, Mode
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
        seedable=seedable(config),
    )


def seedable(config: LimitConfig) -> bool:
    """Can usage recorded per customer and operation rebuild this limit's counter? (seeding.py)"""
    fixed = config.algorithm == Algorithm.FIXED_WINDOW and (config.period_s or 0) >= 60
    windowed = config.algorithm == Algorithm.CALENDAR or fixed
    keyed = config.key_by == ("customer",) or (config.key_by == () and config.plan is None)
    return windowed and keyed and not config.match and config.mode == Mode.ENFORCE


def window_seconds(config: LimitConfig) -> int:
    return CALENDAR_WINDOW_S[config.calendar_period] if config.calendar_period else config.period_s or 0
