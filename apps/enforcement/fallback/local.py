"""The `local` failure policy: each API process enforces its share of a limit, the limit divided by the live
instances (heartbeat.py), so the overshoot across instances stays within one instance's share."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.fallback import heartbeat
from apps.engine import CheckItem, Decision, LimitSpec, MemoryStore
from apps.limits.snapshot import LimitConfig

_local_store = MemoryStore(key_prefix="local")

LocalCheck = tuple[CheckItem, list[LimitSpec]]


def local_spec(limit: LimitConfig, instances: int) -> LimitSpec:
    """This instance's share of the limit: at least 1, so a tiny limit still admits somewhere."""
    share = max(1, limit.quantity // instances)
    burst = max(1, limit.burst // instances) if limit.burst else None
    # In-process and for the outage only: what it admits is recorded by the caller (decide.py), not here.
    return dataclasses.replace(limit_spec_of(limit), quantity=share, burst=burst, durable=False)


def local_checks(items: Sequence[tuple[CheckItem, Sequence[LimitConfig]]]) -> list[LocalCheck]:
    """Each item with its `local` limits as this instance's shares."""
    instances = heartbeat.live_instances()
    return [(item, [local_spec(limit, instances) for limit in limits]) for item, limits in items]


def local_decide(checks: Sequence[LocalCheck], *, atomic: bool, dry_run: bool) -> list[Decision]:
    """Decide `checks` on this process's counters (all or none when `atomic`); nothing is spent on a dry run."""
    pairs = [
        (dataclasses.replace(item, dry_run=True, request_id=None) if dry_run else item, specs) for item, specs in checks
    ]
    return _local_store.check_batch(pairs, "atomic" if atomic else "independent")
