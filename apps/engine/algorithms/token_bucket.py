"""Token bucket: refills `quantity` tokens per period up to `burst`; a check takes its cost or nothing."""

from __future__ import annotations

from apps.engine.algorithms.base import BURST, PERIOD_SECONDS, Algorithm
from apps.engine.algorithms.meter import bucket_durability, check_bucket
from apps.engine.reference import token_bucket as model

ENTRY = Algorithm(
    name="token_bucket",
    label="token bucket",
    code="tb",
    model=model,
    fragments=("meter.lua", "token_bucket.lua"),
    period="seconds",
    params=(PERIOD_SECONDS, BURST),
    durability=bucket_durability(lambda spec, level, since: (level, since)),
    refund=True,
    hybrid=None,
    audit="bucket",
    burst=True,
    key_names_period=True,
    validate=check_bucket,
    summary="refills the limit per period up to its burst; a check takes its cost or nothing",
)
