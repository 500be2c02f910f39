"""Concurrency: at most `quantity` leases held at once; a plain check only looks (admits while one is free)."""

from __future__ import annotations

from apps.engine.algorithms.base import NOT_DURABLE, Algorithm, Param
from apps.engine.reference import concurrency as model

ENTRY = Algorithm(
    name="concurrency",
    label="concurrency",
    code="cc",
    model=model,
    fragments=("concurrency.lua",),
    period="none",
    # Not a counting period: the longest a lease lives (the limits app asks for it).
    params=(Param("period_seconds", "The longest a lease lives, in seconds.", 1),),
    # Its leases live in the store only: a lost store forgets them too.
    durability=NOT_DURABLE,
    # A check spends nothing on it (a lease is released, not refunded).
    refund=False,
    hybrid=None,
    audit="lease_set",
    leased=True,
    lease_set=model,
    fixed_unit="requests",
    summary="leases held at once; acquiring takes one, releasing gives it back",
)
