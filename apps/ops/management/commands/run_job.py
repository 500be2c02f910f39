"""`manage.py run_job NAME`: run one beat job now, through the same code as the schedule."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.ops.jobs import JOBS, job_run


class Command(BaseCommand):
    help = "Run one beat job now (the code the schedule runs) and print what it did."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help=f"One of: {', '.join(sorted(JOBS))}.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the whole report as JSON.")

    def handle(self, *args: Any, name: str, as_json: bool, **options: Any) -> None:
        if name not in JOBS:
            raise CommandError(f"Unknown job {name!r}. Jobs: {', '.join(sorted(JOBS))}.")
        report = job_run(name)
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True, default=str))
        else:
            self.stdout.write(f"{name}: {report['summary']}")
