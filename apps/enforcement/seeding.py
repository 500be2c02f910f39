"""Seeds for durable counters that Redis lost: their records in PostgreSQL (CounterRecord).

RedisStore asks only after a data loss (its epoch key was gone), once per durable counter whose look-back
began before the loss; the engine rebuilds the counter from the records (apps/engine/durability.py). What
was spent in Redis but not yet flushed is lost with it, so the over-admission after a total loss is at
most what was spent since the last flush (the flush runs every minute).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import DatabaseError

from apps.engine.durability import History
from apps.engine.types import SeedRequest
from apps.usage.selectors import counter_history

logger = logging.getLogger(__name__)


def usage_seeds(requests: Sequence[SeedRequest]) -> list[History]:
    """Each request's counter records from its look-back start; none for all if PostgreSQL fails."""
    try:
        return [counter_history(counter=r.counter, since_ms=r.since_ms, now_ms=r.now_ms) for r in requests]
    except DatabaseError as error:
        # Redis and PostgreSQL lost at once: the counters restart empty, as they would without records.
        logger.warning("Could not rebuild %d lost counter(s) from PostgreSQL: %s", len(requests), error)
        return [[] for _ in requests]
