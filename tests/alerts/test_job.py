"""The alert evaluation is a beat job like the others: scheduled every minute, run by hand with run_job."""

import io

import pytest
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from apps.alerts.models import AlertEvent, JobOutcome, RuleKind
from apps.ops.jobs import JOBS, job_run
from apps.ops.tasks import evaluate_alerts_task
from tests.alerts.factories import AlertRuleFactory

pytestmark = pytest.mark.django_db


def test_setup_periodic_tasks_schedules_the_alert_job_every_minute() -> None:
    call_command("setup_periodic_tasks", stdout=io.StringIO())

    task = PeriodicTask.objects.get(name="evaluate_alerts")
    assert (task.task, task.crontab.minute, task.crontab.hour, task.expire_seconds) == (
        "apps.ops.tasks.evaluate_alerts_task", "*", "*", 50,
    )  # fmt: skip


def test_run_job_evaluates_the_rules_and_says_what_fired() -> None:
    JobOutcome.objects.create(name="flush_usage", last_run_at="2026-01-01T00:00Z", failures_in_a_row=3)
    AlertRuleFactory(kind=RuleKind.JOB, threshold=1)
    out = io.StringIO()

    call_command("run_job", "evaluate_alerts", stdout=out)

    assert out.getvalue().strip() == "evaluate_alerts: checked 1 alert rules: 1 fired, 0 resolved, 1 firing now"
    assert AlertEvent.objects.get().subject == "job flush_usage"


def test_the_beat_task_returns_the_jobs_report_and_the_run_is_recorded() -> None:
    result = evaluate_alerts_task.apply().get()

    assert (result["job"], result["rules"], result["errors"]) == ("evaluate_alerts", 0, [])
    assert JobOutcome.objects.get(name="evaluate_alerts").failures_in_a_row == 0


def test_every_job_run_records_its_outcome() -> None:
    job_run("rollup_usage")
    job_run("rollup_usage")

    outcome = JobOutcome.objects.get(name="rollup_usage")
    assert (outcome.failures_in_a_row, outcome.last_success_at, outcome.last_failure_at) == (
        0, outcome.last_run_at, None,
    )  # fmt: skip
    assert "evaluate_alerts" in JOBS
