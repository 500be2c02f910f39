"""Leaky bucket, a shaper: admitted requests leave at the rate; a check may wait up to its max_wait_ms."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.algorithms.base import BURST, PERIOD_SECONDS, Algorithm
from apps.engine.algorithms.meter import bucket_durability, check_bucket
from apps.engine.reference import leaky_bucket as model
from apps.engine.types import MAX_WAIT_MS

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec


def _queued(spec: LimitSpec) -> int:
    """What a check waiting the longest (MAX_WAIT_MS) may queue above the capacity."""
    return MAX_WAIT_MS * spec.quantity


ENTRY = Algorithm(
    name="leaky_bucket",
    label="leaky bucket",
    code="lb",
    model=model,
    fragments=("meter.lua", "leaky_bucket.lua"),
    period="seconds",
    params=(PERIOD_SECONDS, BURST),
    durability=bucket_durability(lambda spec, level, since: (level, since), queued=_queued),
    refund=True,
    hybrid=None,
    audit="bucket",
    burst=True,
    key_names_period=True,
    shaper=model,
    validate=check_bucket,
    summary="a shaper: admitted checks leave at the rate, waiting up to their max_wait_ms",
)
