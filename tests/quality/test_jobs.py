"""The decision log's beat jobs: registered like the others, runnable by run_job, each doing its part."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from apps.ops.jobs import JOBS, job_run
from apps.quality.models import AuditRun, DecisionEvent
from apps.quality.services.jobs import DrainJobReport, decision_log_drain_job
from quota_platform.celery import app as celery_app
from tests.quality.logs import decision, lease, minute_ms, write

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED = {
    "drain_decision_log": ("apps.ops.tasks.drain_decision_log_task", "* * * * *"),
    "purge_decision_log": ("apps.ops.tasks.purge_decision_log_task", "27 3 * * *"),
    "audit_quality": ("apps.ops.tasks.audit_quality_task", "20 0 * * *"),
}


def test_the_jobs_are_registered_with_their_tasks_and_schedules() -> None:
    call_command("setup_periodic_tasks", stdout=io.StringIO())
    celery_app.loader.import_default_modules()  # what a worker does at start: autodiscovers the tasks

    tasks = {task.name: task for task in PeriodicTask.objects.select_related("crontab")}
    for name, (task, cron) in EXPECTED.items():
        c = tasks[name].crontab
        assert (tasks[name].task, f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}") == (
            task, cron
        )  # fmt: skip
        assert JOBS[name].task == task
        assert task in celery_app.tasks
    assert tasks["drain_decision_log"].expire_seconds == 50


def test_the_drain_job_drains_the_counters_redis_and_checks_losses(settings, redis_client, key_prefix) -> None:
    settings.QUOTA_KEY_PREFIX = key_prefix
    start = minute_ms(dt.datetime.now(dt.UTC)) - 10 * 60_000
    write(redis_client, key_prefix, decision(start), lease(start + 1, "acquire", "m1"))

    out = io.StringIO()
    call_command("run_job", "drain_decision_log", stdout=out)

    assert DecisionEvent.objects.count() == 2
    assert "drain_decision_log: drained 2 log entries from 1 streams: 2 stored" in out.getvalue()
    assert "loss check of" in out.getvalue()


def test_without_redis_the_drain_job_says_there_is_nothing(settings) -> None:
    settings.COUNTERS_REDIS_URL = ""

    report = decision_log_drain_job()

    assert report == DrainJobReport(None, None)
    assert "nothing to drain" in report.summary


def test_the_audit_job_audits_the_previous_utc_day_and_keeps_the_run() -> None:
    report = job_run("audit_quality")

    run = AuditRun.objects.get()
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    assert (run.start, run.end, run.trigger) == (today - dt.timedelta(days=1), today, "job")
    assert report["audit_run"] == run.pk
    assert "audited 0 log entries" in report["summary"]


def test_the_purge_job_runs() -> None:
    report = job_run("purge_decision_log")

    assert "purged about 0 decision log entries" in report["summary"]
