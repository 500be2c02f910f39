"""manage.py export_decision_log: the raw decision log of a range as CSV or JSON lines, streamed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from apps.quality.exports import FORMATS, export_write
from apps.quality.selectors import LogFilters, log_entries_count, log_events
from apps.quality.timeparse import moment_parse

BAR_REDRAW_S = 0.2


class Command(BaseCommand):
    help = "Write the decision log of [--from, --to) as CSV or JSON lines, oldest first. Progress on standard error."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="start", required=True, metavar="T", help="UTC date or time, included.")
        parser.add_argument("--to", dest="end", required=True, metavar="T", help="UTC date or time, excluded.")
        parser.add_argument("--format", default="csv", choices=sorted(FORMATS), help="csv (default) or jsonl.")
        parser.add_argument("--customer", metavar="C", help="Only this customer.")
        parser.add_argument(
            "--output", metavar="FILE", help="Write here (replaced only once complete); standard output if absent."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            filters = LogFilters(moment_parse(options["start"]), moment_parse(options["end"]), options["customer"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        if filters.end <= filters.start:
            raise CommandError("--to must be after --from.")
        output = Path(options["output"]) if options["output"] else None
        if output is not None and not output.parent.is_dir():
            raise CommandError(f"--output: the folder {output.parent} does not exist.")
        total = log_entries_count(filters=filters)
        with tqdm(file=self.stderr._out, total=total, unit=" entries", desc="export", mininterval=BAR_REDRAW_S) as bar:
            written = self._write(filters, options["format"], output, lambda done: bar.update(done - bar.n))
            bar.update(written - bar.n)
        self.stderr.write(f"Wrote {written:,} log entries as {options['format']} to {output or 'standard output'}.")

    def _write(self, filters: LogFilters, fmt: str, output: Path | None, progress: Any) -> int:
        rows = log_events(filters=filters)
        if output is None:
            stream: Any = self.stdout._out
            written = export_write(rows, fmt, stream.write, progress)
            stream.flush()
            return written
        part = output.with_name(output.name + ".part")
        try:
            with part.open("w", encoding="utf-8", newline="") as target:
                written = export_write(rows, fmt, target.write, progress)
            os.replace(part, output)
        except OSError as error:
            raise CommandError(f"Cannot write {output}: {error.strerror or error}") from None
        finally:
            part.unlink(missing_ok=True)
        return written
