"""Running the quality audit over a range of the stored log and keeping its summary as an AuditRun.

The analysis (apps/quality/analysis, pure Python) merges the per-slot streams the selectors give and reads each
entry once. Decisions made without Redis (degraded) are not in the log: the run lists the minutes that had some,
from UsageMinute.degraded, so an operator knows which stretches the audit could not check.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.common.embedded import DECISION_LOG_NEEDS_REDIS, counters_in_process
from apps.quality.analysis import AuditReport, audit
from apps.quality.models import AuditRun
from apps.quality.selectors import (
    DegradedMinute,
    LogFilters,
    customer_groups,
    degraded_minutes,
    group_customers,
    log_slot_streams,
)

Progress = Callable[[int], None]
DEGRADED_KEPT = 1000  # degraded minutes stored in the run's report (all are counted)


@dataclass(frozen=True, slots=True)
class AuditOutcome:
    run: AuditRun
    report: AuditReport
    degraded: list[DegradedMinute]

    @property
    def summary(self) -> str:
        return (
            f"audited {self.run.events} log entries from {self.run.start:%Y-%m-%d %H:%M} to"
            f" {self.run.end:%Y-%m-%d %H:%M}: {self.run.violations} violations;"
            f" {len(self.degraded)} customer x operation x minutes had degraded decisions (not in the log)"
        )

    def as_dict(self) -> dict[str, object]:
        return {"audit_run": self.run.pk, "events": self.run.events, "violations": self.run.violations}


def log_filters(
    *,
    start: dt.datetime,
    end: dt.datetime,
    customer: str | None = None,
    limit: str | None = None,
    group: str | None = None,
) -> LogFilters:
    """The filters of a run; a group (plan name) is resolved to its customers now."""
    if end <= start:
        raise ValueError(f"the range is empty: --to ({end:%Y-%m-%d %H:%M}) is not after --from")
    customers = group_customers(group) if group else ()
    return LogFilters(start, end, customer or None, limit or None, group or None, customers)


def audit_quality_run(
    *, filters: LogFilters, progress: Progress | None = None, trigger: str = "command"
) -> AuditOutcome:
    """Audit the log of `filters` in one pass and store the run; the run, the report and the degraded minutes.

    The run row is written first (finished_at empty), so a run that dies is seen as such.
    """
    run = AuditRun.objects.create(
        start=filters.start, end=filters.end, filters=filters.as_dict(), started_at=timezone.now(), trigger=trigger
    )
    with transaction.atomic():  # the slot cursors live without WITH HOLD inside one (selectors.py)
        report = audit(log_slot_streams(filters=filters), groups=customer_groups(), progress=progress)
    degraded = degraded_minutes(filters=filters)
    body = report.to_json()
    body["degraded"] = {
        "minutes": len(degraded),
        "decisions": sum(minute.degraded for minute in degraded),
        "first": [_degraded_json(minute) for minute in degraded[:DEGRADED_KEPT]],
    }
    run.finished_at = timezone.now()
    run.events = report.events
    run.violations = len(report.violations)
    run.degraded_minutes = len(degraded)
    run.report = body
    run.save(update_fields=["finished_at", "events", "violations", "degraded_minutes", "report"])
    return AuditOutcome(run, report, degraded)


@dataclass(frozen=True, slots=True)
class AuditSkipped:
    """The daily job's report when there is no decision log to audit (the embedded default): no run is kept."""

    summary: str = DECISION_LOG_NEEDS_REDIS

    def as_dict(self) -> dict[str, object]:
        return {"audit_run": None, "skipped": self.summary}


def audit_previous_day(*, now: dt.datetime | None = None) -> AuditOutcome | AuditSkipped:
    """The daily job: the whole previous UTC day, every customer and limit; skipped, saying why, without Redis."""
    if counters_in_process():
        return AuditSkipped()
    today = (now or timezone.now()).astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    filters = log_filters(start=today - dt.timedelta(days=1), end=today)
    return audit_quality_run(filters=filters, trigger="job")


def _degraded_json(minute: DegradedMinute) -> dict[str, object]:
    return {
        "customer": minute.customer,
        "operation": minute.operation,
        "minute": minute.minute.isoformat(),
        "degraded": minute.degraded,
    }
