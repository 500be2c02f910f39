"""Deleting usage that has outlived its use: rows past each table's retention, old flush claims, counter
records no rebuild can need any more, and quarantined rows (kept as long as the minutes they would have been).

Minute usage partitioned by day (PostgreSQL, services/partitions.py) goes a whole day at a time: every day
partition that ends before the cutoff is dropped, with no row read. The cutoff (now minus the retention, or
the start of the oldest day a rollup still needs) is seldom midnight, so the day it falls in is partly past
retention: its expired part, and any expired row in the DEFAULT partition, are deleted row by row, as before
(a query on the bucket, so PostgreSQL touches only that day's partition and DEFAULT). The retention stays to
the minute; rounding it to whole days would keep up to a day more than configured.

Each app purges its own rows (expired overrides and rules in apps/limits, the database failure policy's
windows in apps/enforcement); the purge_expired job (apps/ops/purge.py) runs them all. Redis needs no purge:
every key the engine writes carries a TTL, so expired leases and orphan counters disappear on their own.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import connection
from django.db.models import Model, QuerySet
from django.utils import timezone

from apps.engine.keys import USAGE_TTL_MS
from apps.usage.models import (
    CounterRecord,
    FlushedMinute,
    QuarantinedUsage,
    RollupMark,
    UsageBucket,
    UsageDay,
    UsageHour,
    UsageMinute,
)
from apps.usage.services.flush import MINUTE_MS, minute_start
from apps.usage.services.partitions import (
    partitioned,
    usage_partitions_drop,
    usage_partitions_ensure,
)

# A minute can still be flushed this long after it happened (the store keeps usage for USAGE_TTL_MS).
# Its claim must outlive that, or a retried flush could add it twice; and the minutes and hours its
# rollup recomputes from must still be there, so no usage table is purged younger than this either.
LATE_FLUSH_HORIZON = dt.timedelta(milliseconds=USAGE_TTL_MS) + dt.timedelta(days=1)


def usage_purge(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Delete usage rows past retention and flush claims nobody needs; how many of each went."""
    now = now or timezone.now()
    keep = _usage_kept_from(now)
    old_claims = FlushedMinute.objects.filter(rolled_up=True, minute__lt=_minute_of(now - LATE_FLUSH_HORIZON))
    report = {
        "minutes": _purge_minutes(settings.QUOTA_RETENTION_MINUTE_DAYS, now, keep),
        "hours": _purge_usage(UsageHour, settings.QUOTA_RETENTION_HOUR_DAYS, now, keep),
        "days": _purge_usage(UsageDay, settings.QUOTA_RETENTION_DAY_DAYS, now, keep),
        "claims": _delete(old_claims),
        "counter_records": _delete(CounterRecord.objects.filter(until_ms__lt=_ms(now))),
        "quarantined_usage": _purge_quarantined(settings.QUOTA_RETENTION_MINUTE_DAYS, now),
    }
    # After the drop, so no partition is made for a day about to go; days left in DEFAULT get theirs.
    usage_partitions_ensure(today=now.astimezone(dt.UTC).date(), adopt=True)
    return report


def _usage_kept_from(now: dt.datetime) -> dt.datetime:
    """No usage row from this instant on is purged: the late-flush horizon, and the UTC day of the
    oldest minute not yet rolled up, flushed or marked (its hour and day are recomputed from what lies below them)."""
    kept = now - LATE_FLUSH_HORIZON
    claimed = FlushedMinute.objects.filter(rolled_up=False).order_by("minute").values_list("minute", flat=True)
    marked = RollupMark.objects.order_by("minute").values_list("minute", flat=True)
    for oldest in (claimed.first(), marked.first()):
        if oldest is not None:
            kept = min(kept, minute_start(oldest).replace(hour=0, minute=0))
    return kept


def _purge_usage(model: type[UsageBucket], retention_days: int, now: dt.datetime, kept_from: dt.datetime) -> int:
    if retention_days <= 0:  # 0 = keep forever
        return 0
    return _delete(model.objects.filter(bucket__lt=min(now - dt.timedelta(days=retention_days), kept_from)))


def _purge_minutes(retention_days: int, now: dt.datetime, kept_from: dt.datetime) -> int:
    """Minute rows past retention (module docstring); on a partitioned table, the rows of the days dropped
    are PostgreSQL's estimate, the rest counted exactly."""
    if retention_days <= 0 or not partitioned():
        return _purge_usage(UsageMinute, retention_days, now, kept_from)
    cutoff = min(now - dt.timedelta(days=retention_days), kept_from)
    _, dropped_rows = usage_partitions_drop(before=cutoff)
    # A day partition that could not be dropped now (locked) waits for the next purge, not a row-by-row delete.
    day_start = cutoff.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    deleted = _delete(UsageMinute.objects.filter(bucket__gte=day_start, bucket__lt=cutoff))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM usage_usageminute_default WHERE bucket < %s", [day_start])
        deleted += cursor.rowcount
    return dropped_rows + deleted


def _purge_quarantined(retention_days: int, now: dt.datetime) -> int:
    if retention_days <= 0:  # 0 = keep forever
        return 0
    return _delete(QuarantinedUsage.objects.filter(quarantined_at__lt=now - dt.timedelta(days=retention_days)))


def _delete(queryset: QuerySet[Model]) -> int:
    return queryset.delete()[1].get(queryset.model._meta.label, 0)


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _minute_of(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000) // MINUTE_MS
