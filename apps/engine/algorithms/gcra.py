"""GCRA (generic cell rate algorithm, as redis-cell and Stripe run it): `quantity` per period with `burst`,
one timestamp per key. It admits what a token bucket of the same numbers admits; its state is one TAT."""

from __future__ import annotations

from typing import Any

from apps.engine.algorithms.base import BURST, PERIOD_SECONDS, Algorithm
from apps.engine.algorithms.meter import bucket_durability, check_bucket
from apps.engine.reference import gcra as model
from apps.engine.reference.base import Params


def _stored(state: Any, params: Params) -> str:
    """gcra.lua's "<tat ms>:<frac>"."""
    tat_ms, frac = state
    return f"{tat_ms}:{frac}"


ENTRY = Algorithm(
    name="gcra",
    label="GCRA",
    code="gc",
    model=model,
    fragments=("gcra.lua",),
    period="seconds",
    params=(PERIOD_SECONDS, BURST),
    # A TAT `level` (1/quantity ms) ahead of the look-back start: a full burst, as the buckets replay from.
    durability=bucket_durability(
        lambda spec, level, since: model.at(since, _params(spec), level),
        stored=_stored,
    ),
    refund=True,
    hybrid=None,
    audit="bucket",
    burst=True,
    key_names_period=True,
    validate=check_bucket,
    summary="a theoretical arrival time per key: the limit per period, with bursts up to its burst",
)


def _params(spec: Any) -> Params:
    return Params(spec.quantity, spec.period_ms, spec.capacity)
