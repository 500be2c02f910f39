"""Every beat job by name: what it runs, the Celery task that runs it on schedule, and when.

The Celery tasks, `manage.py run_job NAME` and `manage.py setup_periodic_tasks` all read JOBS, so a job
run by hand is the same code as the scheduled one. A job's `run` takes no arguments and returns a
report: a dataclass with a one-line `summary` (a property, or a method) and, optionally, `as_dict()`.
The report as a dict is what the tasks (apps/ops/tasks.py) return and what `run_job --json` prints.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.alerts.services.job_outcomes import job_outcome_record
from apps.enforcement.counters.guarded_store import engine_store
from apps.enforcement.counters.recovery import counters_reconcile
from apps.enforcement.counters.warm_up import WarmReport, counters_warm
from apps.enforcement.decisions.specs import counter_reach_ms
from apps.enforcement.ledger.pending import decision_ledger
from apps.ops.purge import purge_expired
from apps.ops.readiness import readiness_report
from apps.usage.services import usage_flush, usage_rollup
from apps.usage.services.writers import writers_silent_check

logger = logging.getLogger(__name__)


def flush_usage() -> Any:
    # Counters spent on outside Redis are rebuilt first, in case no request has reconciled them yet.
    counters_reconcile(store=engine_store())
    decision_ledger.flush()
    # Writers whose ledger went silent without a graceful exit: counted, logged, their minutes marked.
    writers_silent_check()
    # What is still in Redis: leases' session time, and usage an earlier version counted there (an upgrade).
    return usage_flush(store=engine_store(), reach=counter_reach_ms)


def warm_counters(counters: tuple[str, ...] = (), progress: Callable[[int], None] | None = None) -> WarmReport:
    """One GET while the counters are warm; after an empty restart, their bulk rebuild (warm_up.py)."""
    return counters_warm(store=engine_store(), counters=counters, progress=progress)


def drain_decision_log() -> Any:
    # Imported when run, like refresh_toggles: a problem in the quality app breaks its jobs only.
    from apps.quality.services.jobs import decision_log_drain_job

    return decision_log_drain_job()


def purge_decision_log() -> Any:
    from apps.quality.services.purge import decision_log_purge

    return decision_log_purge()


def audit_quality() -> Any:
    from apps.quality.services.audits import audit_previous_day

    return audit_previous_day()


def refresh_toggles() -> Any:
    # Imported when run: a problem in that app then breaks this one job, not the whole table.
    from apps.toggles.services import toggles_refresh

    return toggles_refresh()


def evaluate_alerts() -> Any:
    from apps.alerts.services.evaluation import alerts_evaluate

    return alerts_evaluate(store_probe=store_problems)


def store_problems() -> list[str]:
    """What the readiness probe finds wrong with Redis (and the counters' Redis), in words, for the store alert."""
    checks = readiness_report()[1]
    return [
        f"{name}: {checks[name].get('error', 'not ready')}"
        for name in ("redis", "counters")
        if name in checks and not checks[name].get("ok", True)
    ]


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    run: Callable[..., Any]
    task: str
    cron: str  # minute hour day-of-month month day-of-week, UTC; "" with every_seconds
    description: str
    # A scheduled run that has not started within this many seconds is dropped, so a worker that was
    # down does not work through a backlog of identical runs (None: never dropped).
    expire_seconds: int | None = None
    every_seconds: int | None = None  # a job run more often than a minute allows: every this many seconds

    @property
    def schedule(self) -> str:
        """When it runs, as pages show it."""
        return f"every {self.every_seconds} s" if self.every_seconds else f"{self.cron} UTC"


JOBS: dict[str, Job] = {
    job.name: job
    for job in (
        Job(
            "flush_usage",
            flush_usage,
            "apps.ops.tasks.flush_usage_task",
            "* * * * *",  # https://crontab.guru/#*_*_*_*_*
            "Move completed minutes of usage from Redis into PostgreSQL, exactly once.",
            expire_seconds=50,
        ),
        Job(
            "rollup_usage",
            usage_rollup,
            "apps.ops.tasks.rollup_usage_task",
            # Two minutes past each five: the flush at hh:01 has stored minute hh:59 before hh:02.
            "2-59/5 * * * *",  # https://crontab.guru/#2-59/5_*_*_*_*
            "Recompute the hours and days that newly flushed minutes fall in.",
            expire_seconds=240,
        ),
        Job(
            "purge_expired",
            purge_expired,
            "apps.ops.tasks.purge_expired_task",
            "17 3 * * *",  # https://crontab.guru/#17_3_*_*_*
            "Delete usage past retention, expired overrides and access rules, old flush claims.",
        ),
        Job(
            "warm_counters",
            warm_counters,
            "apps.ops.tasks.warm_counters_task",
            "",
            "After Redis came up empty, rebuild the durable counters of open windows in bulk, then mark the epoch "
            "warm (one GET while it is).",
            expire_seconds=5,
            every_seconds=5,
        ),
        Job(
            "drain_decision_log",
            drain_decision_log,
            "apps.ops.tasks.drain_decision_log_task",
            "* * * * *",  # https://crontab.guru/#*_*_*_*_*
            "Move the decision log from its Redis streams into PostgreSQL, then check no logged decision was lost.",
            expire_seconds=50,
        ),
        Job(
            "purge_decision_log",
            purge_decision_log,
            "apps.ops.tasks.purge_decision_log_task",
            "27 3 * * *",  # https://crontab.guru/#27_3_*_*_*
            "Drop the decision log's days past DECISION_LOG_RETENTION_DAYS.",
        ),
        Job(
            "audit_quality",
            audit_quality,
            "apps.ops.tasks.audit_quality_task",
            # After the previous day's last minutes are flushed and drained (a few minutes past midnight).
            "20 0 * * *",  # https://crontab.guru/#20_0_*_*_*
            "Audit the previous UTC day's decision log (limits held, concurrency, monopolization); keep the run.",
        ),
        Job(
            "refresh_toggles",
            refresh_toggles,
            "apps.ops.tasks.refresh_toggles_task",
            "* * * * *",  # https://crontab.guru/#*_*_*_*_*
            "Refresh feature toggles, hot overrides and allow/deny rules from the external source (or the "
            "last-known-good file).",
            expire_seconds=50,
        ),
        Job(
            "evaluate_alerts",
            evaluate_alerts,
            "apps.ops.tasks.evaluate_alerts_task",
            "* * * * *",  # https://crontab.guru/#*_*_*_*_*
            "Check the alert rules; notify each new firing and each resolution once (email, signed webhook).",
            expire_seconds=50,
        ),
    )
}


def job_run(name: str, **arguments: Any) -> dict[str, Any]:
    """Run the job called `name` now (with `arguments`, when it takes any); its report as a dict, with its one-line
    summary under "summary". Each run's outcome is recorded (apps/alerts JobOutcome), which the "beat job failing"
    alert watches."""
    try:
        report = JOBS[name].run(**arguments)
    except Exception as error:
        job_outcome_record(name=name, error=error)
        raise
    # A job that handles its failure itself (refresh_toggles falls back to the last-known-good file) says so in its
    # report's `error`: the run failed all the same, and the "beat job failing" alert must see it.
    job_outcome_record(name=name, error=getattr(report, "error", None) or None)
    fields = report.as_dict() if hasattr(report, "as_dict") else dataclasses.asdict(report)
    summary = report.summary() if callable(report.summary) else report.summary
    return {"job": name, **fields, "summary": summary}
