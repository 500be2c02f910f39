"""Deleting usage that has outlived its use: rows past each table's retention, old flush claims, counter
records no rebuild can need any more, and quarantined rows (kept as long as the minutes they would have been).

Each app purges its own rows (expired overrides and rules in apps/limits, the database failure policy's
windows in apps/enforcement); the purge_expired job (apps/ops/jobs.py) runs them all. Redis needs no purge:
every key the engine writes carries a TTL, so expired leases and orphan counters disappear on their own.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
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

# A minute can still be flushed this long after it happened (the store keeps usage for USAGE_TTL_MS).
# Its claim must outlive that, or a retried flush could add it twice; and the minutes and hours its
# rollup recomputes from must still be there, so no usage table is purged younger than this either.
LATE_FLUSH_HORIZON = dt.timedelta(milliseconds=USAGE_TTL_MS) + dt.timedelta(days=1)


def usage_purge(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Delete usage rows past retention and flush claims nobody needs; how many of each went."""
    now = now or timezone.now()
    keep = _usage_kept_from(now)
    old_claims = FlushedMinute.objects.filter(rolled_up=True, minute__lt=_minute_of(now - LATE_FLUSH_HORIZON))
    return {
        "minutes": _purge_usage(UsageMinute, settings.QUOTA_RETENTION_MINUTE_DAYS, now, keep),
        "hours": _purge_usage(UsageHour, settings.QUOTA_RETENTION_HOUR_DAYS, now, keep),
        "days": _purge_usage(UsageDay, settings.QUOTA_RETENTION_DAY_DAYS, now, keep),
        "claims": _delete(old_claims),
        "counter_records": _delete(CounterRecord.objects.filter(until_ms__lt=_ms(now))),
        "quarantined_usage": _purge_quarantined(settings.QUOTA_RETENTION_MINUTE_DAYS, now),
    }


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
