"""The operators' dashboard on the admin index: who is throttled, who is close to a limit, and whether the
platform itself is healthy (Redis, the database in use, degraded decisions, config snapshot, beat jobs).

A beat job's last run is the job's own record (apps.alerts JobOutcome, written by every run as it ends), not
django-celery-beat's `last_run_at`, which beat writes back only every few minutes and which says when a run was
sent, not whether it ran.

Each panel is built on its own: one that fails (Redis down, say) shows a sentence, the others still show.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.alerts.models import JobOutcome
from apps.common.embedded import COUNTERS_IN_PROCESS, PRODUCTION_SETUP
from apps.common.metrics_exposition import metrics_registry
from apps.enforcement.counters.inspection import customers_limit_states
from apps.enforcement.models import FallbackCounter
from apps.limits.models import ConfigVersion
from apps.limits.snapshot_holder import config_snapshot_state
from apps.ops.jobs import JOBS
from apps.ops.readiness import database_check, database_name, redis_check
from apps.usage.models import FlushedMinute
from apps.usage.selectors import CustomerTotals, usage_busiest_customers, usage_most_throttled

logger = logging.getLogger(__name__)
T = TypeVar("T")

NOW_WINDOW = dt.timedelta(minutes=15)
THROTTLED_SHOWN = 10
NEAR_LIMIT_FRACTION = 0.8
NEAR_LIMIT_CANDIDATES = 200  # the busiest customers today are the ones checked against their limits
NEAR_LIMIT_SHOWN = 20
DEGRADED_METRIC = "quota_degraded_decisions"


@dataclass(frozen=True)
class NearLimit:
    customer: str
    limit: str
    operation: str
    used: int
    capacity: int

    @property
    def percent(self) -> int:
        return round(100 * self.used / self.capacity)


@dataclass(frozen=True)
class Degraded:
    by_operation: list[tuple[str, int]]
    database_windows_open: int

    @property
    def total(self) -> int:
        return sum(count for _, count in self.by_operation)


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    ok: bool
    detail: str
    state: str  # what the page says after the name: "up", "DOWN", or "not configured"


@dataclass(frozen=True)
class ConfigStatus:
    version: int | None
    changed_at: dt.datetime | None
    process_version: int | None
    process_age_s: float | None
    from_file: bool


@dataclass(frozen=True)
class JobStatus:
    name: str
    description: str
    cron: str
    scheduled: bool
    enabled: bool
    last_run_at: dt.datetime | None  # when the job last ran (succeeded or failed), from its own record
    failures_in_a_row: int
    last_error: str
    last_sent_at: dt.datetime | None  # what beat's row says (written back every few minutes)


@dataclass
class Dashboard:
    now: dt.datetime
    throttled_now: list[CustomerTotals] = field(default_factory=list)
    throttled_today: list[CustomerTotals] = field(default_factory=list)
    near_limits: list[NearLimit] = field(default_factory=list)
    degraded: Degraded | None = None
    services: list[ServiceStatus] = field(default_factory=list)
    config: ConfigStatus | None = None
    jobs: list[JobStatus] = field(default_factory=list)
    last_flush_at: dt.datetime | None = None
    errors: dict[str, str] = field(default_factory=dict)


def _today_start(now: dt.datetime) -> dt.datetime:
    return now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def near_limits(customers: list[str]) -> list[NearLimit]:
    """Limits of `customers` at or above NEAR_LIMIT_FRACTION of their capacity now, fullest first."""
    found = [
        NearLimit(customer, state.limit.name, state.limit.operation, state.used or 0, state.capacity or 0)
        for customer, states in customers_limit_states(customers).items()
        for state in states
        if state.fraction is not None and state.fraction >= NEAR_LIMIT_FRACTION
    ]
    return sorted(found, key=lambda near: (-near.used / near.capacity, near.customer, near.limit))[:NEAR_LIMIT_SHOWN]


def degraded_decisions() -> Degraded:
    counts: dict[str, int] = {}
    for family in metrics_registry().collect():
        if family.name != DEGRADED_METRIC:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                operation = sample.labels.get("operation", "?")
                counts[operation] = counts.get(operation, 0) + int(sample.value)
    open_windows = FallbackCounter.objects.filter(window_end__gt=timezone.now()).count()
    return Degraded(sorted(counts.items(), key=lambda item: (-item[1], item[0])), open_windows)


def service_statuses() -> list[ServiceStatus]:
    statuses = []
    for name, check in ((database_name(), database_check), ("Redis", redis_check)):
        result = check()
        state = "up" if result["ok"] else "DOWN"
        if not result["ok"]:
            detail = result.get("error", "not answering")
        elif result.get("mode") == "in-process":
            state = "not configured"
            detail = f"{COUNTERS_IN_PROCESS}; the decision log and usage-share alerts need Redis ({PRODUCTION_SETUP})"
        else:
            detail = f"answered in {result.get('ms', '?')} ms"
            if result.get("warning"):
                detail += f"; warning: {result['warning']}"
        statuses.append(ServiceStatus(name, bool(result["ok"]), detail, state))
    return statuses


def config_status() -> ConfigStatus:
    row = ConfigVersion.objects.filter(pk=ConfigVersion.SINGLETON_ID).first()
    state = config_snapshot_state()
    return ConfigStatus(
        version=row.version if row else None,
        changed_at=row.changed_at if row else None,
        process_version=state.version,
        process_age_s=state.age_s,
        from_file=state.from_file,
    )


def job_statuses() -> list[JobStatus]:
    tasks = {task.name: task for task in PeriodicTask.objects.filter(name__in=list(JOBS))}
    outcomes = {outcome.name: outcome for outcome in JobOutcome.objects.filter(name__in=list(JOBS))}
    statuses = []
    for job in JOBS.values():
        task, outcome = tasks.get(job.name), outcomes.get(job.name)
        statuses.append(
            JobStatus(
                name=job.name,
                description=job.description,
                cron=job.cron or job.schedule,
                scheduled=task is not None,
                enabled=bool(task and task.enabled),
                last_run_at=outcome.last_run_at if outcome else None,
                failures_in_a_row=outcome.failures_in_a_row if outcome else 0,
                last_error=outcome.last_error if outcome else "",
                last_sent_at=task.last_run_at if task else None,
            )
        )
    return statuses


def _panel(board: Dashboard, name: str, build: Callable[[], T], failure: str) -> T | None:
    try:
        return build()
    except Exception as error:
        # One panel must not take the page down; the traceback goes to the log, a sentence to the page.
        logger.exception("Dashboard panel %s failed", name)
        board.errors[name] = f"{failure} ({' '.join(str(error).split()) or type(error).__name__})."
        return None


def throttled(now: dt.datetime) -> tuple[list[CustomerTotals], list[CustomerTotals]]:
    """The most refused customers in the last NOW_WINDOW (minutes) and since UTC midnight (rolled-up hours)."""
    recent = usage_most_throttled(
        granularity="minute", start=now - NOW_WINDOW, end=now + dt.timedelta(minutes=1), count=THROTTLED_SHOWN
    )
    today = usage_most_throttled(
        granularity="hour", start=_today_start(now), end=now + dt.timedelta(hours=1), count=THROTTLED_SHOWN
    )
    return recent, today


def near_limit_candidates(now: dt.datetime, throttled_now: list[CustomerTotals]) -> list[str]:
    """Who to check against their limits: the customers throttled now, then the busiest today."""
    busiest = usage_busiest_customers(
        granularity="hour", start=_today_start(now), end=now + dt.timedelta(hours=1), count=NEAR_LIMIT_CANDIDATES
    )
    return list(dict.fromkeys([row.customer for row in throttled_now] + [row.customer for row in busiest]))


def dashboard_build(*, now: dt.datetime | None = None) -> Dashboard:
    now = now or timezone.now()
    board = Dashboard(now=now)
    found = _panel(board, "throttled", lambda: throttled(now), "The usage tables could not be read")
    board.throttled_now, board.throttled_today = found or ([], [])
    candidates = _panel(
        board,
        "near_limits",
        lambda: near_limit_candidates(now, board.throttled_now),
        "The usage tables could not be read",
    )
    if candidates:
        board.near_limits = (
            _panel(board, "near_limits", lambda: near_limits(candidates), "Live counters could not be read") or []
        )
    board.degraded = _panel(board, "degraded", degraded_decisions, "Degraded decisions could not be counted")
    board.services = _panel(board, "services", service_statuses, "The status checks failed") or []
    board.config = _panel(board, "config", config_status, "The config version could not be read")
    board.jobs = _panel(board, "jobs", job_statuses, "The beat schedule could not be read") or []
    latest = _panel(board, "jobs", lambda: FlushedMinute.objects.order_by("-minute").first(), "No flush record")
    board.last_flush_at = latest.flushed_at if latest else None
    return board
