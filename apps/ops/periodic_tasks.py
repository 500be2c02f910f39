"""JOBS (jobs.py) written into django-celery-beat's tables, one PeriodicTask per job by name, for
`manage.py setup_periodic_tasks` and `make run`: beat then schedules what JOBS states.
"""

from __future__ import annotations

import zoneinfo

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.ops.jobs import JOBS, Job


@transaction.atomic
def periodic_tasks_setup() -> dict[str, str]:
    """Create or update one django-celery-beat row per job, by name: {name: created | updated | unchanged}.

    Only what JOBS states is written; `enabled` is set on creation and then left to the operators.
    """
    return {job.name: _periodic_task_sync(job) for job in JOBS.values()}


def _periodic_task_sync(job: Job) -> str:
    wanted = {
        "task": job.task,
        "crontab": None if job.every_seconds else _crontab(job.cron),
        "interval": _interval(job.every_seconds) if job.every_seconds else None,
        "solar": None,
        "clocked": None,
        "one_off": False,
        "expires": None,
        "expire_seconds": job.expire_seconds,
        "description": job.description,
    }
    task = PeriodicTask.objects.filter(name=job.name).first()
    if task is None:
        PeriodicTask.objects.create(name=job.name, **wanted)
        return "created"
    changed = {field: value for field, value in wanted.items() if getattr(task, field) != value}
    if not changed:
        return "unchanged"
    for field, value in changed.items():
        setattr(task, field, value)
    task.save()
    return "updated"


def _crontab(cron: str) -> CrontabSchedule:
    minute, hour, day_of_month, month_of_year, day_of_week = cron.split()
    fields = {
        "minute": minute,
        "hour": hour,
        "day_of_month": day_of_month,
        "month_of_year": month_of_year,
        "day_of_week": day_of_week,
        "timezone": zoneinfo.ZoneInfo("UTC"),
    }
    return CrontabSchedule.objects.filter(**fields).order_by("pk").first() or CrontabSchedule.objects.create(**fields)


def _interval(seconds: int) -> IntervalSchedule:
    fields = {"every": seconds, "period": IntervalSchedule.SECONDS}
    return IntervalSchedule.objects.filter(**fields).order_by("pk").first() or IntervalSchedule.objects.create(**fields)
