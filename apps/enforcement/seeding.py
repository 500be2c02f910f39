"""Seeds for counters that Redis lost: the usage PostgreSQL already holds for their window.

RedisStore asks only after a data loss (its epoch key was gone), once per counter whose window began
before the loss; see apps/engine/store/redis.py. What was counted in Redis but not yet flushed is lost
with it, so the over-admission after a total loss is at most the usage of the last unflushed minutes.

Only limits whose counter is exactly what the usage tables count are seedable (specs.py): keyed by
customer (or global and for every plan), no attribute match, enforced, a window of a minute or longer.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence

from django.conf import settings
from django.db import DatabaseError
from django.db.models import BigIntegerField, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from apps.engine.types import REQUESTS, SeedRequest
from apps.usage.models import UsageBucket, UsageHour, UsageMinute

logger = logging.getLogger(__name__)
HOUR = dt.timedelta(hours=1)


def usage_seeds(requests: Sequence[SeedRequest]) -> list[int]:
    """The recorded use of each request's counter in [window start, now); 0 for all if PostgreSQL fails."""
    try:
        return [_recorded(request) for request in requests]
    except DatabaseError as error:
        # Redis and PostgreSQL lost at once: the windows restart empty, as they did before seeding existed.
        logger.warning("Could not re-seed %d lost counter(s) from PostgreSQL: %s", len(requests), error)
        return [0] * len(requests)


def _recorded(request: SeedRequest) -> int:
    start, now = _utc(request.window_start_ms), _utc(request.now_ms)
    # Minutes are kept QUOTA_RETENTION_MINUTE_DAYS: older parts of a long window come from the hour rollups,
    # split at an hour boundary an hour inside the minutes' retention so no usage is read twice.
    kept_since = now - dt.timedelta(days=settings.QUOTA_RETENTION_MINUTE_DAYS) + HOUR
    cutoff = max(start, kept_since.replace(minute=0, second=0, microsecond=0) + HOUR)
    total = _used(UsageMinute.objects.filter(bucket__gte=cutoff, bucket__lt=now), request)
    if start < cutoff:
        total += _used(UsageHour.objects.filter(bucket__gte=start, bucket__lt=cutoff), request)
    return total


def _used(rows: QuerySet[UsageBucket], request: SeedRequest) -> int:
    rows = rows.filter(operation=request.item.operation)
    if "customer" in request.spec.key_by:
        rows = rows.filter(customer=request.item.customer)
    unit = request.spec.unit
    amount = Sum("allowed") if unit == REQUESTS else Sum(Cast(KeyTextTransform(unit, "costs"), BigIntegerField()))
    return rows.aggregate(used=amount)["used"] or 0


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
