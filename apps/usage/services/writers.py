"""The usage writers (UsageWriter): which processes write usage from their ledgers, and what a silent one may
have lost.

A decision ledger (apps/enforcement/ledger/pending.py) writes its heartbeat with every round and deregisters on a
graceful exit. `writers_silent_check` (run with the usage flush job, every minute) finds the writers whose
heartbeat stopped without a deregistration: each is marked once, counted in quota_usage_writers_lost_total and
named in a WARNING line. The minutes it may have left incomplete run from the minute before its last heartbeat
(decisions tallied while that round was being written, on Redis's clock) to the minute in which it had to write
again (its interval, plus the slack the check allows): `incomplete_minutes` answers them for a range, for the
usage API, the exports and the admin.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from apps.common.metrics import USAGE_WRITERS_LOST
from apps.usage.models import UsageWriter

logger = logging.getLogger(__name__)
MINUTE_MS = 60_000
# A writer is silent once it missed this many rounds and this slack on top (a busy database, a slow round).
MISSED_ROUNDS = 3
SLACK = dt.timedelta(seconds=30)
# Before its last heartbeat: a round takes what is pending, then writes; decisions carry Redis's time.
BEFORE_LAST_ROUND = dt.timedelta(minutes=1)
# Deregistered or long-silent writers are kept this long (their marks with them), then purged.
KEPT_FOR = dt.timedelta(days=31)

HEARTBEAT_SQL = (
    "INSERT INTO {table} (name, started_at, flushed_at, interval_s) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (name) DO UPDATE SET flushed_at = excluded.flushed_at, interval_s = excluded.interval_s, "
    "silent_since = NULL"
)


def writer_name() -> str:
    """This process's name among the writers: host, pid and a random part (a pid is reused)."""
    return f"{socket.gethostname()[:120]}:{os.getpid()}:{secrets.token_hex(4)}"


def writer_flushed(*, name: str, interval_s: float, now: dt.datetime | None = None) -> None:
    """Record a round of `name` (inside the round's transaction): registered on its first one."""
    now = now or timezone.now()
    table = connection.ops.quote_name(UsageWriter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(HEARTBEAT_SQL.format(table=table), [name, now, now, interval_s])


def writer_stopped(*, name: str, now: dt.datetime | None = None) -> None:
    """`name` exited gracefully after its last round: its silence from now on is no loss."""
    UsageWriter.objects.filter(name=name).update(stopped_at=now or timezone.now())


@dataclass(slots=True)
class SilentReport:
    found: list[str] = field(default_factory=list)  # writers found silent by this run
    purged: int = 0

    @property
    def summary(self) -> str:
        if not self.found:
            return "no usage writer went silent"
        return (
            f"{len(self.found)} usage writer(s) stopped without a graceful exit; up to one interval of their "
            f"decisions may be missing from usage: {', '.join(self.found)}"
        )


def writers_silent_check(*, now: dt.datetime | None = None) -> SilentReport:
    """Mark the writers whose heartbeat stopped without a deregistration (once each), count and log them."""
    now = now or timezone.now()
    report = SilentReport()
    candidates = UsageWriter.objects.filter(stopped_at__isnull=True, silent_since__isnull=True)
    for writer in candidates.filter(flushed_at__lt=now - SLACK):
        if writer.flushed_at + dt.timedelta(seconds=MISSED_ROUNDS * writer.interval_s) + SLACK > now:
            continue
        # Only if still silent: a heartbeat that landed meanwhile wins.
        if UsageWriter.objects.filter(pk=writer.pk, flushed_at=writer.flushed_at).update(silent_since=now):
            report.found.append(f"{writer.name} (last round {writer.flushed_at:%Y-%m-%d %H:%M:%S} UTC)")
    if report.found:
        USAGE_WRITERS_LOST.inc(len(report.found))
        logger.warning("usage writers: %s", report.summary)
    report.purged = UsageWriter.objects.filter(flushed_at__lt=now - KEPT_FOR).delete()[0]
    return report


def usage_complete_before(*, now: dt.datetime) -> int:
    """The first minute whose usage may still be on its way: every writer still writing has written a round since
    the minutes before it ended (each minute before it is complete, or marked incomplete by a silent writer)."""
    writing = UsageWriter.objects.filter(stopped_at__isnull=True, silent_since__isnull=True)
    oldest = min(writing.values_list("flushed_at", flat=True), default=now)
    return _minute(min(oldest, now) - BEFORE_LAST_ROUND)


def incomplete_minutes(start: int, end: int) -> set[int]:
    """The minutes in [start, end) (epoch_ms // 60000) whose usage may lack what a silent writer held."""
    found: set[int] = set()
    silent = UsageWriter.objects.filter(silent_since__isnull=False, stopped_at__isnull=True)
    for flushed_at, interval_s in silent.values_list("flushed_at", "interval_s"):
        first = _minute(flushed_at - BEFORE_LAST_ROUND)
        last = _minute(flushed_at + dt.timedelta(seconds=interval_s) + SLACK)
        found.update(range(max(first, start), min(last + 1, end)))
    return found


def _minute(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000) // MINUTE_MS


BUCKET_MINUTES = {"minute": 1, "hour": 60, "day": 1440}


def incomplete_buckets(*, granularity: str, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The buckets of `granularity` (minute, hour, day; UTC) starting in [start, end) that hold a possibly incomplete
    minute: the mark the usage API, its CSV and XLSX answers carry."""
    size = BUCKET_MINUTES[granularity]
    first, last = _minute(start) // size * size, _minute(end)
    buckets = {minute // size * size for minute in incomplete_minutes(first, last + size)}
    moments = [dt.datetime.fromtimestamp(bucket * 60, tz=dt.UTC) for bucket in sorted(buckets)]
    return [moment for moment in moments if start <= moment < end]
