"""Celery tasks for the beat jobs: thin, each runs one job of apps/ops/jobs.py and owns its retries.

Every job is idempotent (the flush claims each minute, the rollup recomputes, the purge deletes by
age), so a retry, a duplicate delivery or a run killed at its time limit is harmless.
"""

from typing import Any

from celery import shared_task
from django.db import DatabaseError
from redis.exceptions import RedisError

from apps.ops.jobs import job_run

# PostgreSQL or Redis briefly away: retry after 1, 2, 4 … s (jittered), then leave it to the next run.
RETRIES: dict[str, Any] = {
    "autoretry_for": (DatabaseError, RedisError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 3,
}


@shared_task(**RETRIES, soft_time_limit=45, time_limit=55)
def flush_usage_task() -> dict[str, Any]:
    return job_run("flush_usage")


@shared_task(**RETRIES, soft_time_limit=240, time_limit=270)
def rollup_usage_task() -> dict[str, Any]:
    return job_run("rollup_usage")


@shared_task(**{**RETRIES, "max_retries": 5, "retry_backoff_max": 600}, soft_time_limit=1800, time_limit=1900)
def purge_expired_task() -> dict[str, Any]:
    return job_run("purge_expired")


@shared_task(**RETRIES, soft_time_limit=45, time_limit=55)
def drain_decision_log_task() -> dict[str, Any]:
    return job_run("drain_decision_log")


@shared_task(**{**RETRIES, "max_retries": 5, "retry_backoff_max": 600}, soft_time_limit=1800, time_limit=1900)
def purge_decision_log_task() -> dict[str, Any]:
    return job_run("purge_decision_log")


# Evaluation reads PostgreSQL and Redis only; notifications leave in their own task (apps/alerts/tasks.py).
@shared_task(**RETRIES, soft_time_limit=45, time_limit=55)
def evaluate_alerts_task() -> dict[str, Any]:
    return job_run("evaluate_alerts")


# A day of log is read once (about 1M entries in well under a minute); no retry: a failed audit leaves its
# unfinished AuditRun, and running the same day again is `manage.py audit_quality --from ... --to ...`.
@shared_task(soft_time_limit=3600, time_limit=3700)
def audit_quality_task() -> dict[str, Any]:
    return job_run("audit_quality")


# One GET while warm; a bulk rebuild after an empty restart (100k counters in seconds, bench/notes/warm.md). A run
# asked for by a check names the counters it met (their Cluster tags are looked at too). No retry: the next run is
# seconds away, and one runner at a time (the warm-up's lock) skips the others.
@shared_task(soft_time_limit=600, time_limit=660)
def warm_counters_task(counters: list[str] | None = None) -> dict[str, Any]:
    return job_run("warm_counters", **({"counters": tuple(counters)} if counters else {}))


# Fetch failures are handled inside (the last-known-good file applies) and recorded as the run's failure by job_run;
# only the database failing is retried, e.g. two refreshes racing to create one toggle (the retry changes nothing).
# The fetch has its own timeout (QUOTA_TOGGLES_TIMEOUT_S); the time limits stop a refresh stuck elsewhere.
@shared_task(autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=3, soft_time_limit=60, time_limit=90)
def refresh_toggles_task() -> dict[str, Any]:
    return job_run("refresh_toggles")
