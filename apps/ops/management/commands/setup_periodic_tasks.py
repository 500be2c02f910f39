"""`manage.py setup_periodic_tasks`: create or update the beat schedule rows (django-celery-beat) by name."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from apps.ops.jobs import JOBS
from apps.ops.periodic_tasks import periodic_tasks_setup


class Command(BaseCommand):
    help = "Create or update one periodic task per beat job (safe to run again: unchanged rows are not touched)."

    def handle(self, *args: Any, **options: Any) -> None:
        for name, outcome in periodic_tasks_setup().items():
            job = JOBS[name]
            self.stdout.write(f"{name}: {outcome} ({job.schedule} -> {job.task})")
