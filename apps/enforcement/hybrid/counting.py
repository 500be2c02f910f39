"""Hybrid counting in the API server (issue 16, docs/hybrid.md): a limit with `sync_ms` is decided by this worker
process on its own count and what the other instances reported, exchanged with Redis every `sync_ms` and at
window ends (quota_client.hybrid, the same algorithm the SDK's local limiter runs; the exchange is
apps/engine/hybrid_peers.py; this process's counters and their background exchanges are counters.py). A request
that finds its counter's exchange due (the thread not there yet) makes it itself, so no decision uses counts
older than `sync_ms`; a counter nobody asks stops exchanging.

A check with hybrid limits stays all or nothing: each hybrid limit reserves its cost here first; if one refuses,
the others' reservations are given back and the check is refused without spending its exact limits; when Redis
then refuses the exact limits, the hybrid reservations are given back (services.decide).

Durability (a window of a minute or longer, as exact limits): what a reservation that stands spent is recorded on
the counter's window, under the exact counter's name, through the decision ledger (hybrid_spent); and a counter the
store lost starts from those records (hybrid_sync.lua asks `recorded_windows` once per counter after a loss: the
store's epoch, shared with check.lua, is later than its previous window's start). Nothing else reads PostgreSQL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from quota_client.hybrid import (
    HybridCounter,
)

from apps.enforcement.counters.recovery import Spending
from apps.enforcement.hybrid.counters import counter_for
from apps.engine import CheckItem, LimitResult, LimitSpec
from apps.limits.snapshot import LimitConfig


class Taken(NamedTuple):
    """One reservation: `cost` counted on `counter` (the limit named `limit`) in the window starting `window`;
    `record`: the counter's name in its records when the limit is durable, else None."""

    counter: HybridCounter
    cost: int
    window: int
    limit: str
    record: str | None = None


@dataclass(frozen=True, slots=True)
class HybridHold:
    """The hybrid limits of one check: their reports, whether all admitted, and the reservations taken."""

    allowed: bool
    retry_after_ms: int | None
    results: tuple[LimitResult, ...]
    taken: tuple[Taken, ...]

    def given_back(self) -> tuple[LimitResult, ...]:
        """The reports once the reservations are given back (hybrid_give_back): what they took is left again."""
        returned = {taken.limit: taken.cost for taken in self.taken}
        return tuple(
            dataclasses.replace(result, remaining=min(result.limit, result.remaining + returned.get(result.name, 0)))
            for result in self.results
        )


def hybrid_take(item: CheckItem, limits: Sequence[LimitConfig], specs: Sequence[LimitSpec]) -> HybridHold:
    """Reserve `item`'s cost on each hybrid limit, all or nothing (a shadow limit reports, never refuses); a dry
    run reserves nothing and reports what is left before it."""
    counted = [counter_for(limit, spec, item) for limit, spec in zip(limits, specs, strict=True)]
    counters = [one.counter for one in counted]
    taken: list[Taken] = []
    over: set[str] = set()
    for limit, (counter, record) in zip(limits, counted, strict=True):
        cost = item.cost_of(limit.unit)
        if cost <= 0:
            continue  # nothing to count: the limit is only reported
        window = counter.take(cost)
        if window is None:
            over.add(limit.name)
        else:
            taken.append(Taken(counter, cost, window, limit.name, record))
    refused = [limit for limit in limits if limit.name in over and limit.mode != "shadow"]
    if refused or item.dry_run:  # a dry run only looks: what it took is back before anyone decides on it
        hybrid_give_back(taken)
        taken = []
    results = tuple(
        _result(limit, counter, limit.name in over) for limit, counter in zip(limits, counters, strict=True)
    )
    retry = max((result.reset_ms for result in results if result.over and not result.shadow), default=0)
    if any(item.cost_of(limit.unit) > limit.quantity for limit in refused):
        return HybridHold(False, None, results, ())  # the cost can never pass
    return HybridHold(not refused, retry if refused else 0, results, tuple(taken))


def hybrid_give_back(taken: Sequence[Taken]) -> None:
    for reservation in taken:
        reservation.counter.give_back(reservation.cost, reservation.window)


def hybrid_spent(taken: Sequence[Taken]) -> Spending | None:
    """What reservations that stand spent on durable counters, for their records (None: nothing to record)."""
    records = [reservation for reservation in taken if reservation.record is not None]
    if not records:
        return None
    spending = Spending()
    for reservation in records:
        spending.record(str(reservation.record), reservation.window, reservation.cost)
    return spending


def _result(limit: LimitConfig, counter: HybridCounter, over: bool) -> LimitResult:
    remaining, reset_ms = counter.status()
    shadow = limit.mode == "shadow"
    return LimitResult(limit.name, limit.algorithm, limit.unit, limit.quantity, remaining, reset_ms, shadow, over)
