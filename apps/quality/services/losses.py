"""The loss check: was every decision the check script logged drained into DecisionEvent?

The process that decided tallies 1 in `logged` of the same customer x operation x minute for every allow/deny entry
the script wrote (apps/engine/decision_usage.py), and its decision ledger writes it to UsageMinute.logged (an
earlier version counted it in Redis, and the usage flush stored it). For a minute whose usage is complete (every
ledger still writing has written past it, apps/usage/services/writers.py; or, from before, its FlushedMinute claim
exists) and drained (its end is MARGIN before a drain that reached every stream), the entries stored for each
customer x operation must equal `logged`. A LogCheck row keeps each customer x operation that logged or drained
anything, and one total row per minute (customer and operation empty) marks the minute checked: each minute is
checked once. Entries lost (a positive difference: trimmed by the stream's cap before a drain, Redis lost) count
into the Prometheus counter quota_decision_log_lost_total and are named in the drain job's output and in a WARNING
log line, on every run that finds any (a surplus, usage lost rather than log entries, too), whatever level the drain
itself logs at: an idle drain logs at debug, and a loss found then must not be as quiet.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count
from django.db.models.functions import TruncMinute

from apps.engine.decision_log import DECISION_EVENTS
from apps.quality.metrics import log_lost_count
from apps.quality.models import DecisionEvent, LogCheck
from apps.usage.models import FlushedMinute, UsageMinute
from apps.usage.services.writers import usage_complete_before

logger = logging.getLogger(__name__)

MINUTE_MS = 60_000
# A minute is checked once its end is this long before the drain began: its entries carry the script's time,
# which runs on Redis's clock, and may lag this host's by a little.
MARGIN_MINUTES = 2
# At most this many minutes per run, oldest first; the rest wait for the next runs.
MINUTES_PER_RUN = 120
# Minutes older than this are never checked: they were flushed long ago, and their entries may be purged.
LOOKBACK = dt.timedelta(days=1)
DIFFERENCES_SHOWN = 10
TOTAL = ""  # customer and operation of a minute's total row

Key = tuple[str, str]  # customer, operation


@dataclass(slots=True)
class LossReport:
    minutes: int = 0
    logged: int = 0
    drained: int = 0
    lost: int = 0
    surplus: int = 0
    differences: list[str] = field(default_factory=list)  # the first few, "customer operation @ minute: +n"

    @property
    def summary(self) -> str:
        text = f"loss check of {self.minutes} minutes: {self.logged} decisions logged, {self.drained} drained"
        if self.lost or self.surplus:
            text += f"; {self.lost} entries LOST, {self.surplus} drained beyond the usage counted"
            text += f" ({', '.join(self.differences)})"
        return text


def log_losses_check(*, drained_at_ms: int, now: dt.datetime | None = None) -> LossReport:
    """Check the flushed minutes that end MARGIN_MINUTES before `drained_at_ms` (when a complete drain
    began) and were not checked yet, oldest first; what was found."""
    now = now or dt.datetime.now(dt.UTC)
    horizon = min(drained_at_ms // MINUTE_MS - MARGIN_MINUTES, usage_complete_before(now=now))
    oldest = int((now - LOOKBACK).timestamp()) * 1000 // MINUTE_MS
    checked = set(
        LogCheck.objects.filter(minute__gte=oldest, customer=TOTAL, operation=TOTAL).values_list("minute", flat=True)
    )
    report = LossReport()
    for minute in sorted(_minutes_with_usage(oldest, horizon) - checked)[:MINUTES_PER_RUN]:
        _minute_check(minute, report)
    if report.lost:
        log_lost_count(report.lost)
    if report.lost or report.surplus:
        logger.warning("decision log %s", report.summary)
    return report


def _minutes_with_usage(oldest: int, horizon: int) -> set[int]:
    """The minutes in [oldest, horizon) that logged or drained anything, or were flushed from Redis."""
    start, end = (dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC) for minute in (oldest, horizon))
    flushed = FlushedMinute.objects.filter(minute__gte=oldest, minute__lt=horizon).values_list("minute", flat=True)
    logged = UsageMinute.objects.filter(bucket__gte=start, bucket__lt=end, logged__gt=0).values_list(
        "bucket", flat=True
    )
    events = DecisionEvent.objects.filter(at__gte=start, at__lt=end, kind__in=DECISION_EVENTS)
    drained = events.annotate(minute=TruncMinute("at")).values_list("minute", flat=True).distinct()
    return {*flushed, *(int(moment.timestamp()) // 60 for moment in (*logged, *drained))}


def _minute_check(minute: int, report: LossReport) -> None:
    start = dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC)
    end = start + dt.timedelta(minutes=1)
    usage = UsageMinute.objects.filter(bucket=start, logged__gt=0).values_list("customer", "operation", "logged")
    logged: Counter[Key] = Counter()
    for customer, operation, count in usage:  # one row per calling service and key: summed
        logged[(customer, operation)] += count
    events = DecisionEvent.objects.filter(at__gte=start, at__lt=end, kind__in=DECISION_EVENTS)
    counted = events.order_by().values_list("customer", "operation").annotate(count=Count("id"))
    drained: Counter[Key] = Counter({(customer, operation): count for customer, operation, count in counted})
    rows = [_row(minute, key, logged[key], drained[key]) for key in sorted(logged.keys() | drained.keys())]
    total = _row(minute, (TOTAL, TOTAL), logged.total(), drained.total())
    with transaction.atomic():
        # A concurrent run checking the same minute: the unique constraint keeps one row each.
        LogCheck.objects.bulk_create([*rows, total], ignore_conflicts=True)
    report.minutes += 1
    report.logged += total.usage_logged
    report.drained += total.drained
    for row in rows:
        report.lost += max(row.difference, 0)
        report.surplus += max(-row.difference, 0)
        if row.difference and len(report.differences) < DIFFERENCES_SHOWN:
            report.differences.append(f"{row.customer} {row.operation} @ {start:%Y-%m-%d %H:%M}: {row.difference:+d}")


def _row(minute: int, key: Key, logged: int, drained: int) -> LogCheck:
    customer, operation = key
    return LogCheck(
        minute=minute,
        customer=customer,
        operation=operation,
        usage_logged=logged,
        drained=drained,
        difference=logged - drained,
    )
