"""`manage.py setup_periodic_tasks`: one beat row per job, by name, and a second run changes nothing."""

import io

import pytest
from django.core.management import call_command
from django.forms.models import model_to_dict
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask, PeriodicTasks

from apps.ops.jobs import JOBS
from quota_platform.celery import app as celery_app

pytestmark = pytest.mark.django_db

EXPECTED = {
    "flush_usage": ("apps.ops.tasks.flush_usage_task", "* * * * *"),
    "rollup_usage": ("apps.ops.tasks.rollup_usage_task", "2-59/5 * * * *"),
    "purge_expired": ("apps.ops.tasks.purge_expired_task", "17 3 * * *"),
    "refresh_toggles": ("apps.ops.tasks.refresh_toggles_task", "* * * * *"),
}


def setup():
    out = io.StringIO()
    call_command("setup_periodic_tasks", stdout=out)
    return out.getvalue()


def cron_of(task):
    c = task.crontab
    return f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}"


def rows():
    return {
        task.name: model_to_dict(task) | {"date_changed": task.date_changed}
        for task in PeriodicTask.objects.exclude(name="celery.backend_cleanup")
    }


def test_it_creates_one_row_per_job_with_its_task_and_utc_cron() -> None:
    output = setup()

    tasks = {task.name: task for task in PeriodicTask.objects.select_related("crontab")}
    assert {name: (tasks[name].task, cron_of(tasks[name])) for name in EXPECTED} == EXPECTED
    assert {str(task.crontab.timezone) for task in tasks.values() if task.crontab} == {"UTC"}
    warm = tasks["warm_counters"]  # more often than a cron can say: an interval
    assert (warm.crontab, warm.interval.every, warm.interval.period) == (None, 5, IntervalSchedule.SECONDS)
    assert all(task.enabled for task in tasks.values())
    assert tasks["flush_usage"].expire_seconds == 50
    assert "flush_usage: created" in output


def test_running_it_twice_changes_nothing() -> None:
    setup()
    before = (rows(), CrontabSchedule.objects.count(), PeriodicTasks.last_change())

    output = setup()

    assert (rows(), CrontabSchedule.objects.count(), PeriodicTasks.last_change()) == before
    assert output.count(": unchanged") == len(JOBS)


def test_it_puts_a_changed_schedule_back_but_leaves_a_disabled_job_disabled() -> None:
    setup()
    every_second = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
    flush = PeriodicTask.objects.get(name="flush_usage")
    flush.crontab, flush.interval, flush.enabled = None, every_second, False
    flush.save()

    assert "flush_usage: updated" in setup()

    flush.refresh_from_db()
    assert (flush.interval, cron_of(flush), flush.enabled) == (None, "* * * * *", False)


def test_every_job_names_a_registered_celery_task() -> None:
    celery_app.loader.import_default_modules()  # what a worker does at start: autodiscovers the tasks

    assert {job.task for job in JOBS.values()} <= set(celery_app.tasks)
