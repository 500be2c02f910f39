"""The purge_expired job: every app deletes its own expired rows, and one report says how many of each."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from dataclasses import dataclass

from django.utils import timezone

from apps.enforcement.fallback import fallback_purge
from apps.enforcement.leases.orphans import allocation_orphans_purge
from apps.limits.services import limits_purge_expired
from apps.usage.services import usage_purge

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PurgeReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    claims: int = 0
    counter_records: int = 0
    quarantined_usage: int = 0
    overrides: int = 0
    access_rules: int = 0
    fallback_counters: int = 0
    fallback_requests: int = 0
    heartbeats: int = 0
    orphan_allocation_sets: int = 0

    @property
    def summary(self) -> str:
        return (
            f"purged {self.minutes} minute, {self.hours} hour and {self.days} day usage rows,"
            f" {self.overrides} expired overrides, {self.access_rules} expired access rules,"
            f" {self.claims} old flush claims, {self.counter_records} counter records past their reach,"
            f" {self.quarantined_usage} old quarantined usage rows,"
            f" {self.fallback_counters} fallback windows,"
            f" {self.fallback_requests} fallback request ids, {self.heartbeats} stale heartbeats,"
            f" {self.orphan_allocation_sets} allocation sets of deleted limits;"
            " expired leases and orphan Redis counters expire by TTL in Redis"
        )


def purge_expired(*, now: dt.datetime | None = None) -> PurgeReport:
    """Each app deletes its own expired rows: usage (apps/usage), overrides and rules (apps/limits), the
    database failure policy's windows, request ids and heartbeats, and allocation sets of deleted limits
    (apps/enforcement)."""
    now = now or timezone.now()
    report = PurgeReport(
        **usage_purge(now=now),
        **limits_purge_expired(now=now),
        **fallback_purge(now=now),
        **allocation_orphans_purge(now=now),
    )
    purged = any(dataclasses.astuple(report))  # nothing purged: debug, so an idle platform is quiet at info
    (logger.info if purged else logger.debug)("purge: %s", report.summary)
    return report
