"""manage.py warm_counters: the beat job `warm_counters` run now, with progress (counters/warm_up.py)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from tqdm import tqdm

from apps.ops.jobs import job_run

BAR_REDRAW_S = 0.2


class Command(BaseCommand):
    help = (
        "Rebuild the durable counters of open windows in Redis from their records in PostgreSQL when Redis came up "
        "empty (or was reset after an outage), then mark the epoch warm; nothing when it is warm already. Prints "
        "how many counters and how long; progress goes to standard error. The run is recorded like the beat job's."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        with tqdm(file=self.stderr._out, unit=" counters", desc="warm-up", mininterval=BAR_REDRAW_S) as bar:
            report = job_run("warm_counters", progress=lambda done: bar.update(done - bar.n))
        self.stdout.write(report["summary"])
