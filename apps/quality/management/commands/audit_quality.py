"""manage.py audit_quality: audit a range of the decision log in one pass; exit status 1 when a limit did not hold,
2 when there is no decision log to audit (the embedded default, without Redis)."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from apps.common.embedded import DECISION_LOG_NEEDS_REDIS, counters_in_process
from apps.quality.services.audits import AuditOutcome, audit_quality_run, log_filters
from apps.quality.timeparse import moment_parse

BAR_REDRAW_S = 0.2
DEGRADED_SHOWN = 50
NO_DECISION_LOG = 2  # exit status: nothing was audited (1 means a limit did not hold)


class Command(BaseCommand):
    help = (
        "Read the decision log of a range in time order (slots merged, one pass) and check every limit held; "
        "print a summary and each violation with its time and key. Exit status 1 when any violation is found. "
        "Decisions made without Redis (degraded) are not in the log: their minutes are listed apart, unchecked. "
        "Progress goes to standard error; the run is kept (admin: Audit runs). Without Redis (the embedded "
        "default) no decision is logged: the command says so and exits with status 2, auditing nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="start", metavar="T", help="UTC date or time (default: --to minus 1 day).")
        parser.add_argument("--to", dest="end", metavar="T", help="UTC date or time, excluded (default: now).")
        parser.add_argument("--customer", metavar="C", help="Only this customer (external id).")
        parser.add_argument("--limit", metavar="NAME", help="Only this limit.")
        parser.add_argument("--group", metavar="PLAN", help="Only the customers of this plan.")
        parser.add_argument("--format", default="text", choices=("text", "json"), help="text (default) or json.")

    def handle(self, *args: Any, **options: Any) -> None:
        if counters_in_process():
            raise CommandError(DECISION_LOG_NEEDS_REDIS, returncode=NO_DECISION_LOG)
        try:
            end = moment_parse(options["end"]) if options["end"] else timezone.now()
            start = moment_parse(options["start"]) if options["start"] else end - dt.timedelta(days=1)
            filters = log_filters(
                start=start, end=end, customer=options["customer"], limit=options["limit"], group=options["group"]
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        with tqdm(file=self.stderr._out, unit=" entries", desc="audit", mininterval=BAR_REDRAW_S) as bar:
            outcome = audit_quality_run(filters=filters, progress=lambda done: bar.update(done - bar.n))
            bar.update(outcome.run.events - bar.n)
        if options["format"] == "json":
            self.stdout.write(json.dumps(outcome.run.report | {"audit_run": outcome.run.pk}, sort_keys=True))
        else:
            self._text(outcome)
        if outcome.run.violations:
            sys.exit(1)

    def _text(self, outcome: AuditOutcome) -> None:
        self.stdout.write(outcome.summary)
        for line in outcome.report.summary_lines():
            self.stdout.write(line)
        if outcome.degraded:
            self.stdout.write(
                f"degraded: {len(outcome.degraded)} customer x operation x minutes had decisions made without Redis;"
                " they are not in the log and were not checked:"
            )
            for minute in outcome.degraded[:DEGRADED_SHOWN]:
                self.stdout.write(
                    f"  DEGRADED {minute.minute:%Y-%m-%d %H:%M} customer={minute.customer}"
                    f" operation={minute.operation}: {minute.degraded} decisions"
                )
            if len(outcome.degraded) > DEGRADED_SHOWN:
                self.stdout.write(f"  ... and {len(outcome.degraded) - DEGRADED_SHOWN} more (admin: the audit run)")
        self.stdout.write(f"audit run #{outcome.run.pk} kept.")
