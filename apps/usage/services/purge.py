"""Deleting what has outlived its use: usage past retention, expired overrides and access rules,
old flush claims, and the database failure policy's finished windows.

Redis needs no purge: every key the engine writes carries a TTL, so expired leases, orphan counters
and unflushed usage disappear there on their own.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Model, QuerySet
from django.utils import timezone

from apps.enforcement.fallback import fallback_purge
from apps.engine.keys import USAGE_TTL_MS
from apps.limits.models import AccessRule, Override
from apps.usage.models import FlushedMinute, UsageBucket, UsageDay, UsageHour, UsageMinute
from apps.usage.services.flush import MINUTE_MS, minute_start

logger = logging.getLogger(__name__)

# A minute can still be flushed this long after it happened (the store keeps usage for USAGE_TTL_MS).
# Its claim must outlive that, or a retried flush could add it twice; and the minutes and hours its
# rollup recomputes from must still be there, so no usage table is purged younger than this either.
LATE_FLUSH_HORIZON = dt.timedelta(milliseconds=USAGE_TTL_MS) + dt.timedelta(days=1)


@dataclass(frozen=True, slots=True)
class PurgeReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    overrides: int = 0
    access_rules: int = 0
    claims: int = 0
    fallback_counters: int = 0
    fallback_requests: int = 0
    heartbeats: int = 0

    @property
    def summary(self) -> str:
        return (
            f"purged {self.minutes} minute, {self.hours} hour and {self.days} day usage rows,"
            f" {self.overrides} expired overrides, {self.access_rules} expired access rules,"
            f" {self.claims} old flush claims, {self.fallback_counters} fallback windows,"
            f" {self.fallback_requests} fallback request ids, {self.heartbeats} stale heartbeats;"
            " expired leases and orphan Redis counters expire by TTL in Redis"
        )


def usage_purge(*, now: dt.datetime | None = None) -> PurgeReport:
    now = now or timezone.now()
    keep = _usage_kept_from(now)
    fallback = fallback_purge(now=now)
    report = PurgeReport(
        minutes=_purge_usage(UsageMinute, settings.QUOTA_RETENTION_MINUTE_DAYS, now, keep),
        hours=_purge_usage(UsageHour, settings.QUOTA_RETENTION_HOUR_DAYS, now, keep),
        days=_purge_usage(UsageDay, settings.QUOTA_RETENTION_DAY_DAYS, now, keep),
        overrides=_delete(Override.objects.filter(ends__lt=now)),
        access_rules=_delete(AccessRule.objects.filter(expires__lt=now)),
        claims=_delete(FlushedMinute.objects.filter(rolled_up=True, minute__lt=_minute_of(now - LATE_FLUSH_HORIZON))),
        fallback_counters=fallback["fallback_counters"],
        fallback_requests=fallback["fallback_request_ids"],
        heartbeats=fallback["heartbeats"],
    )
    logger.info("purge: %s", report.summary)
    return report


def _usage_kept_from(now: dt.datetime) -> dt.datetime:
    """No usage row from this instant on is purged: the late-flush horizon, and the UTC day of the
    oldest minute not yet rolled up (its hour and day are recomputed from what lies below them)."""
    kept = now - LATE_FLUSH_HORIZON
    oldest = FlushedMinute.objects.filter(rolled_up=False).order_by("minute").values_list("minute", flat=True).first()
    if oldest is not None:
        kept = min(kept, minute_start(oldest).replace(hour=0, minute=0))
    return kept


def _purge_usage(model: type[UsageBucket], retention_days: int, now: dt.datetime, kept_from: dt.datetime) -> int:
    if retention_days <= 0:  # 0 = keep forever
        return 0
    return _delete(model.objects.filter(bucket__lt=min(now - dt.timedelta(days=retention_days), kept_from)))


def _delete(queryset: QuerySet[Model]) -> int:
    return queryset.delete()[1].get(queryset.model._meta.label, 0)


def _minute_of(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000) // MINUTE_MS
