"""Rolling minutes up into hours, and hours into days, by recomputation.

A flushed minute's claim (FlushedMinute) stays `rolled_up=False` until a rollup has recomputed the
hour and the day the minute falls in. Recomputing replaces: an hour's rows are rebuilt from all of its
minute rows and a day's from all of its hour rows, so running twice changes nothing, and a minute
flushed late (after its hour was rolled up) is folded in by recomputing that hour again. The current,
partial hour and day are recomputed too, so hour and day rows trail the minutes by one rollup interval.
A minute written by the decisions made without the counter store (decisions.py) has a RollupMark instead
of (or besides) a claim; the rollup recomputes its hour and day the same way, then deletes the mark unless
a write came in meanwhile and bumped its version, so that write is folded in by the next run.

Two rollups never interleave: each holds a transaction-scoped lock (a PostgreSQL advisory lock; SQLite
admits one writer at a time anyway). Without it a rollup that read the minutes before a late flush
could commit its stale hour after a fresher one and mark the late minute rolled up.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import QuerySet

from apps.usage.models import FlushedMinute, RollupMark, UsageBucket, UsageDay, UsageHour, UsageMinute
from apps.usage.services.flush import minute_start
from apps.usage.services.minutes import add_into

logger = logging.getLogger(__name__)

# Claims (and as many marks) handled per run: a backlog (after an outage) is worked through over several runs.
ROLLUP_BATCH_MINUTES = 10_000
# Any constant works; it only has to differ from other advisory locks taken on the same database.
ROLLUP_LOCK_ID = 0x7573_6167  # "usag"
UPDATE_CHUNK = 500
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


@dataclass(frozen=True, slots=True)
class RollupReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    pending: int = 0
    marked: int = 0  # minutes written without the store (RollupMark), besides the flushed ones

    @property
    def summary(self) -> str:
        return (
            f"rolled up {self.minutes} flushed minutes and {self.marked} written without the store into"
            f" {self.hours} hours and {self.days} days; {self.pending} minutes left for the next run"
        )


@transaction.atomic
def usage_rollup(*, batch_minutes: int = ROLLUP_BATCH_MINUTES) -> RollupReport:
    _lock()
    claims = FlushedMinute.objects.filter(rolled_up=False).order_by("minute")
    minutes = list(claims.values_list("minute", flat=True)[:batch_minutes])
    marks = dict(RollupMark.objects.order_by("minute").values_list("minute", "version")[:batch_minutes])
    hours = sorted({minute_start(minute).replace(minute=0) for minute in [*minutes, *marks]})
    for hour in hours:
        _recompute(UsageHour, UsageMinute, hour, hour + HOUR)
    days = sorted({hour.replace(hour=0) for hour in hours})
    for day in days:
        _recompute(UsageDay, UsageHour, day, day + DAY)
    for start in range(0, len(minutes), UPDATE_CHUNK):
        FlushedMinute.objects.filter(minute__in=minutes[start : start + UPDATE_CHUNK]).update(rolled_up=True)
    _marks_delete(marks)
    pending = claims.count() + RollupMark.objects.count()
    report = RollupReport(minutes=len(minutes), hours=len(hours), days=len(days), pending=pending, marked=len(marks))
    # At debug when there was nothing to roll up: an idle platform logs nothing at info every few minutes.
    (logger.info if report.minutes or report.marked else logger.debug)("usage rollup: %s", report.summary)
    return report


def _marks_delete(read: dict[int, int]) -> None:
    """Delete the marks rolled up, those still at the version read before recomputing (minute -> version).

    They are locked in minute order first, as the writers lock them, so the two never deadlock.
    """
    minutes = list(read)
    for start in range(0, len(minutes), UPDATE_CHUNK):
        found = RollupMark.objects.select_for_update().filter(minute__in=minutes[start : start + UPDATE_CHUNK])
        locked = found.order_by("minute").values_list("pk", "minute", "version")
        RollupMark.objects.filter(pk__in=[pk for pk, minute, version in locked if version == read[minute]]).delete()


def _lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ROLLUP_LOCK_ID])


def rows_in(source: type[UsageBucket], start: dt.datetime, end: dt.datetime) -> QuerySet[UsageBucket]:
    """source's rows with start <= bucket < end: a range on the partition key, so PostgreSQL reads only the
    day partitions of UsageMinute it spans (tests/usage/services/test_usage_partitions.py shows the plan)."""
    return source.objects.filter(bucket__gte=start, bucket__lt=end).order_by()


def _recompute(target: type[UsageBucket], source: type[UsageBucket], start: dt.datetime, end: dt.datetime) -> None:
    """Replace target's rows of the bucket starting at `start` by the sums of source's rows in [start, end), one
    per customer x operation x calling service x API key: the rollup keeps services and keys apart."""
    totals: dict[tuple[str, str, str, str], UsageBucket] = {}
    for row in rows_in(source, start, end).iterator(chunk_size=2000):
        key = (row.customer, row.operation, row.service, row.api_key)
        total = totals.get(key)
        if total is None:
            total = totals[key] = target(
                customer=row.customer,
                operation=row.operation,
                service=row.service,
                api_key=row.api_key,
                bucket=start,
                costs={},
            )
        add_into(total, row)
    target.objects.filter(bucket=start).delete()
    target.objects.bulk_create(totals.values(), batch_size=1000)
