"""From a limit in the config snapshot to what the engine evaluates."""

import dataclasses
import functools

from django.conf import settings

from apps.engine import LimitSpec
from apps.engine.durability import reach_ms
from apps.limits.models import Mode
from apps.limits.snapshot import LimitConfig

CALENDAR_WINDOW_S = {"day": 86400, "week": 604800, "month": 2592000}


@functools.lru_cache(maxsize=8192)
def limit_spec_of(config: LimitConfig) -> LimitSpec:
    spec = LimitSpec(
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
    return dataclasses.replace(spec, durable=durable(spec))


def durable(spec: LimitSpec) -> bool:
    """Every limit whose counter can be rebuilt after a Redis loss is (apps/engine/durability.py): calendar
    quotas, and windows, logs and buckets of a minute or longer, whatever their key and match, as long as
    their records reach back no further than they are kept (QUOTA_COUNTER_RECORD_DAYS)."""
    kept_ms = settings.QUOTA_COUNTER_RECORD_DAYS * 86_400_000
    return spec.can_be_durable and reach_ms(spec) <= kept_ms


def window_seconds(config: LimitConfig) -> int:
    return CALENDAR_WINDOW_S[config.calendar_period] if config.calendar_period else config.period_s or 0
