"""Allocation sets of limits that are gone (deleted, or no longer a concurrency limit), deleted by the purge job.

A set has no TTL in Redis while it holds a member, and its rows stay in PostgreSQL: neither goes away by itself.
A set of a gone limit, untouched for ORPHAN_KEEP (a limit deleted by mistake and made again keeps its sets), is
deleted from both, Redis first. Should Redis not answer, or the counters live on a Redis Cluster (whose keys the
operator tools cannot delete), the rows stay and the next purge tries again rather than leave a set in Redis with
no record of it.
"""

from __future__ import annotations

import datetime as dt
import logging

from apps.enforcement.counters.guarded_store import engine_store
from apps.enforcement.counters.inspection import CountersUnavailable, named_counters_delete
from apps.enforcement.counters.redis_clients import COUNTERS_ERRORS
from apps.enforcement.models import AllocationSet
from apps.engine import Store
from apps.engine.registry import LEASE_SET
from apps.limits.models import Limit

logger = logging.getLogger(__name__)

ORPHAN_KEEP = dt.timedelta(days=1)
BATCH = 1000  # sets per purge run: the rest wait for the next one
_NOT_DELETED: tuple[type[Exception], ...] = (CountersUnavailable, *COUNTERS_ERRORS)  # Redis's sets stay as they are


def allocation_orphans_purge(*, now: dt.datetime, store: Store | None = None) -> dict[str, int]:
    """Delete up to BATCH sets of gone limits untouched since `now` - ORPHAN_KEEP; how many."""
    live = Limit.objects.filter(algorithm=LEASE_SET.name).values_list("name", flat=True)  # the allocations' algorithm
    orphans = list(
        AllocationSet.objects.exclude(limit__in=list(live))
        .filter(updated_at__lt=now - ORPHAN_KEEP)
        .order_by("pk")
        .values_list("pk", "counter")[:BATCH]
    )
    if not orphans:
        return {"orphan_allocation_sets": 0}
    try:
        named_counters_delete(store or engine_store(), [counter for _, counter in orphans])
    except _NOT_DELETED as error:
        message = "Kept %d allocation sets of deleted limits for the next purge: their Redis sets were not deleted (%s)"
        logger.warning(message, len(orphans), error)
        return {"orphan_allocation_sets": 0}
    AllocationSet.objects.filter(pk__in=[pk for pk, _ in orphans]).delete()
    return {"orphan_allocation_sets": len(orphans)}
