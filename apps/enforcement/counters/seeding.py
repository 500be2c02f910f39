"""Seeds for durable counters that Redis lost: their records in PostgreSQL (CounterRecord); for a lease set, the
allocations PostgreSQL keeps (leases/durable.py).

RedisStore asks only after a data loss (its epoch key was gone), once per durable counter whose look-back
began before the loss; the engine rebuilds the counter from the records (apps/engine/durability.py). What
was spent in Redis but not yet flushed is lost with it, so the over-admission after a total loss is at
most what was spent since the last flush (the flush runs every minute).

Hybrid counters ask the same way (hybrid_sync.lua, once per counter after a loss) for two windows' totals, their
floors (docs/hybrid.md); what was admitted but not yet written by the deciding processes' ledgers is what a loss of
both Redis and those processes can still re-grant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from django.db import DatabaseError, connection

from apps.enforcement.counters.warm_trigger import warm_up_wanted
from apps.enforcement.leases.durable import allocations_of
from apps.engine.durability import History
from apps.engine.types import SeedRequest
from apps.usage.selectors import counter_history

logger = logging.getLogger(__name__)


def usage_seeds(requests: Sequence[SeedRequest]) -> list[History | list[str]]:
    """Each request's counter records from its look-back start (a lease set's: its kept allocations,
    leases/durable.py); none for all if PostgreSQL fails. A check asking means its epoch is not warm yet: a warm-up
    is asked for too (warm_up.py)."""
    warm_up_wanted([r.counter for r in requests])
    try:
        sets = [r.counter for r in requests if r.spec.entry.lease_set is not None]
        kept = dict(zip(sets, allocations_of(sets), strict=True)) if sets else {}
        return [
            kept[r.counter]
            if r.counter in kept
            else counter_history(counter=r.counter, since_ms=r.since_ms, now_ms=r.now_ms)
            for r in requests
        ]
    except DatabaseError as error:
        # Redis and PostgreSQL lost at once: the counters restart empty, as they would without records.
        logger.warning("Could not rebuild %d lost counter(s) from PostgreSQL: %s", len(requests), error)
        return [[] for _ in requests]


def recorded_windows(counter: str, now_ms: Callable[[], int]) -> Callable[[int, int], tuple[int, int]]:
    """What the records of hybrid `counter` hold of a window and of the one before it: (start, previous start)
    -> (total, previous total), the floors of a counter the store lost; (0, 0) if PostgreSQL fails too."""

    def recorded(start: int, prev_start: int) -> tuple[int, int]:
        try:
            history = counter_history(counter=counter, since_ms=prev_start, now_ms=now_ms())
        except DatabaseError as error:
            logger.warning("Could not read the records of lost hybrid counter %s from PostgreSQL: %s", counter, error)
            return 0, 0
        finally:
            # Asked by whichever thread exchanges, often the exchange timer's, which must not keep a connection open
            # (once per counter after a loss: reconnecting is cheap). A caller inside a transaction keeps its own.
            if not connection.in_atomic_block:
                connection.close()
        totals = {start: 0, prev_start: 0}
        for bucket, amount in history:
            if bucket in totals:
                totals[bucket] += amount
        return totals[start], totals[prev_start]

    return recorded
