"""What each kind of rule finds now: {subject: Finding} for every subject over its threshold.

A subject absent from the answer is fine (a firing for it resolves). A condition that cannot be read raises
instead (ConditionUnreadable), so an unreadable Redis never passes for "everything is fine".
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from django.db.models import Sum
from django.db.models.functions import Coalesce

from apps.alerts.models import AlertEvent, AlertRule, JobOutcome, RuleKind
from apps.common.embedded import USAGE_ALERTS_NEED_REDIS, counters_in_process
from apps.enforcement.counters.breaker import CLOSED
from apps.enforcement.counters.guarded_store import breaker_for
from apps.enforcement.counters.inspection import CountersUnavailable, customers_limit_states
from apps.usage.models import UsageHour, UsageMinute, UsageWriter
from apps.usage.vocabulary import WITHOUT_REDIS

STORE_SUBJECT = "counter store"
# Without a customer on the rule, the customers with usage in the last day are read (plus those firing now).
ACTIVE_SINCE = dt.timedelta(days=1)
StoreProbe = Callable[[], list[str]]


class ConditionUnreadable(Exception):
    """The rule's inputs could not be read; the rule neither fires nor resolves this time."""


@dataclass(frozen=True, slots=True)
class Finding:
    value: float
    message: str


def findings_of(rule: AlertRule, *, now: dt.datetime, store_probe: StoreProbe) -> dict[str, Finding]:
    if rule.kind == RuleKind.USAGE:
        return usage_findings(rule, now=now)
    if rule.kind == RuleKind.DENIALS:
        return denial_findings(rule, now=now)
    if rule.kind == RuleKind.STORE:
        return store_findings(rule, now=now, store_probe=store_probe)
    return job_findings(rule)


def usage_findings(rule: AlertRule, *, now: dt.datetime) -> dict[str, Finding]:
    if counters_in_process():
        # This process's counters are not the API's: reading them would find every customer at 0 %.
        raise ConditionUnreadable(USAGE_ALERTS_NEED_REDIS)
    customers = [rule.customer.external_id] if rule.customer else _active_customers(rule, now)
    try:
        states = customers_limit_states(customers)
    except CountersUnavailable as error:
        raise ConditionUnreadable(str(error)) from error
    found = {}
    for customer, limit_states in states.items():
        for state in limit_states:
            if rule.limit and state.limit.name != rule.limit.name:
                continue
            if state.fraction is None or 100 * state.fraction < rule.threshold:
                continue
            percent = round(100 * state.fraction, 1)
            found[f"{customer} / {state.limit.name}"] = Finding(
                percent,
                f"Customer {customer} has used {state.used} of {state.capacity} ({percent:g}%) of limit "
                f"{state.limit.name} on {state.limit.operation}; the rule fires at {rule.threshold}%.",
            )
    return found


def _active_customers(rule: AlertRule, now: dt.datetime) -> list[str]:
    recent = set(UsageMinute.objects.filter(bucket__gte=now - dt.timedelta(hours=1)).values_list("customer", flat=True))
    today = set(UsageHour.objects.filter(bucket__gte=now - ACTIVE_SINCE).values_list("customer", flat=True))
    firing = AlertEvent.objects.filter(rule=rule, open=True).values_list("subject", flat=True)
    return sorted(recent | today | {subject.split(" / ", 1)[0] for subject in firing})


def _window(rule: AlertRule, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    end = now.astimezone(dt.UTC).replace(second=0, microsecond=0)
    return end - dt.timedelta(minutes=max(rule.window_minutes, 1)), end


def denial_findings(rule: AlertRule, *, now: dt.datetime) -> dict[str, Finding]:
    start, end = _window(rule, now)
    rows = UsageMinute.objects.filter(bucket__gte=start, bucket__lt=end)
    operation = rule.operation.name if rule.operation else None
    if operation:
        rows = rows.filter(operation=operation)
    if rule.customer:
        rows = rows.filter(customer=rule.customer.external_id)
    by = "operation" if operation and not rule.customer else "customer"
    busiest: dict[str, int] = {}
    for row in rows.values("bucket", by).annotate(refused=Coalesce(Sum("denied"), 0)):
        busiest[row[by]] = max(busiest.get(row[by], 0), row["refused"])
    scope = f" on {operation}" if operation else ""
    return {
        f"{by} {name}": Finding(
            refused,
            f"{by.capitalize()} {name} had {refused} checks refused by limits{scope} in one minute "
            f"(of the last {rule.window_minutes}); the rule fires above {rule.threshold}.",
        )
        for name, refused in sorted(busiest.items())
        if refused > rule.threshold
    }


def store_findings(rule: AlertRule, *, now: dt.datetime, store_probe: StoreProbe) -> dict[str, Finding]:
    problems = list(store_probe())
    if (state := breaker_for(None).state) != CLOSED:
        problems.append(
            f"the circuit breaker in front of Redis is {state.replace('_', '-')} in the alert job's process"
        )
    start, end = _window(rule, now)
    minutes = UsageMinute.objects.filter(bucket__gte=start, bucket__lt=end).values("bucket")
    # The decisions made while Redis was away (the vocabulary's without_redis counters: degraded, unavailable).
    without = reduce(operator.add, (Sum(name) for name in WITHOUT_REDIS))
    busiest = max((row["without"] for row in minutes.annotate(without=without)), default=0)
    if busiest > rule.threshold:
        problems.append(f"{busiest} checks were decided without Redis in one minute (the rule allows {rule.threshold})")
    silent = UsageWriter.objects.filter(silent_since__gte=start, stopped_at__isnull=True).count()
    if silent:
        problems.append(
            f"{silent} API process(es) stopped without a graceful exit in the last {rule.window_minutes} minutes: "
            "up to one ledger interval of their decisions may be missing from usage (the minutes are marked)"
        )
    if not problems:
        return {}
    return {STORE_SUBJECT: Finding(busiest, "The counter store is degraded: " + "; ".join(problems) + ".")}


def job_findings(rule: AlertRule) -> dict[str, Finding]:
    outcomes = JobOutcome.objects.filter(failures_in_a_row__gte=max(rule.threshold, 1))
    if rule.job:
        outcomes = outcomes.filter(name=rule.job)
    return {
        f"job {outcome.name}": Finding(
            outcome.failures_in_a_row,
            f"Beat job {outcome.name} failed {outcome.failures_in_a_row} times in a row, last at "
            f"{outcome.last_failure_at or outcome.last_run_at:%Y-%m-%d %H:%M:%S} UTC: {outcome.last_error}",
        )
        for outcome in outcomes
    }
