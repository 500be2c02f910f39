"""Session time: at most `quantity` seconds of lease time per window of `period_s` (reference/session_time.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.algorithms.base import NOT_DURABLE, PERIOD_SECONDS, Algorithm
from apps.engine.reference import session_time as model
from apps.engine.types import MAX_SAFE_INT

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec


def _check(spec: LimitSpec) -> str | None:
    return "quantity (seconds) x 1000 must stay below 2**53" if spec.quantity * 1000 > MAX_SAFE_INT else None


ENTRY = Algorithm(
    name="session_time",
    label="session time",
    code="st",
    model=model,
    fragments=("session_time.lua",),
    period="seconds",
    params=(PERIOD_SECONDS,),
    # Its time is made of live leases, which are not durable either.
    durability=NOT_DURABLE,
    # A check spends nothing on it: leases hold its time.
    refund=False,
    hybrid=None,
    audit="lease_time",
    leased=True,
    lease_clock=model,
    fixed_unit="seconds",
    validate=_check,
    summary="seconds of lease time per window; acquiring and renewing are refused once spent",
)
