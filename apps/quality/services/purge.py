"""Deleting the decision log past DECISION_LOG_RETENTION_DAYS (default 14): whole day partitions dropped on
PostgreSQL, the cutoff's own day and DEFAULT row by row (as apps/usage/services/purge.py does for minutes);
loss check rows go with the days they checked. Audit runs are small summaries and are kept.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.quality.models import DecisionEvent, LogCheck
from apps.quality.services.partitions import DECISION_EVENTS, log_partitions_drop, log_partitions_ensure, partitioned


@dataclass(frozen=True, slots=True)
class LogPurgeReport:
    partitions: tuple[str, ...] = ()
    events: int = 0
    checks: int = 0

    @property
    def summary(self) -> str:
        return (
            f"purged about {self.events} decision log entries ({len(self.partitions)} day partitions dropped)"
            f" and {self.checks} loss check rows, older than {settings.DECISION_LOG_RETENTION_DAYS} days"
        )


def decision_log_purge(*, now: dt.datetime | None = None) -> LogPurgeReport:
    """Delete log entries and loss checks older than the retention; 0 days keeps them forever."""
    now = now or timezone.now()
    days = settings.DECISION_LOG_RETENTION_DAYS
    if days <= 0:
        return LogPurgeReport()
    cutoff = now - dt.timedelta(days=days)
    dropped, events = _purge_events(cutoff)
    checks = LogCheck.objects.filter(minute__lt=int(cutoff.timestamp()) // 60).delete()[0]
    # After the drop, so no partition is made for a day about to go; days left in DEFAULT get theirs.
    log_partitions_ensure(today=now.astimezone(dt.UTC).date(), adopt=True)
    return LogPurgeReport(partitions=tuple(dropped), events=events, checks=checks)


def _purge_events(cutoff: dt.datetime) -> tuple[list[str], int]:
    """Partitions dropped, entries gone (PostgreSQL's estimate for the dropped days, the rest counted)."""
    if not partitioned(table=DECISION_EVENTS):
        return [], DecisionEvent.objects.filter(at__lt=cutoff).delete()[0]
    dropped, events = log_partitions_drop(before=cutoff)
    # A day partition that could not be dropped now (locked) waits for the next purge, not a row-by-row delete.
    day_start = cutoff.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    events += DecisionEvent.objects.filter(at__gte=day_start, at__lt=cutoff).delete()[0]
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {DECISION_EVENTS.default} WHERE at < %s", [day_start])  # noqa: S608
        events += cursor.rowcount
    return dropped, events
