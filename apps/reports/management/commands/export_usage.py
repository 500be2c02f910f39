"""manage.py export_usage: a usage report as CSV, XLSX or JSON, with a progress bar on standard error."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, BinaryIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from apps.reports.exports import FORMATS
from apps.reports.filters import UsageFilters
from apps.reports.forms import UsageExportForm
from apps.reports.selectors import usage_report_count, usage_report_rows
from apps.reports.services import Progress, usage_report_to_path, usage_report_write

# The progress bar moves every this many rows, and redraws at most every BAR_REDRAW_S seconds.
PROGRESS_EVERY = 1000
BAR_REDRAW_S = 0.2
OPTION_BY_FIELD = {
    "start": "--from",
    "end": "--to",
    "customers": "--customer",
    "operations": "--operation",
    "services": "--service",
    "api_keys": "--api-key",
}


class Command(BaseCommand):
    help = (
        "Write usage per customer, operation, calling service and API key over whole UTC days as CSV, XLSX or "
        "JSON: the same filters, columns and formats as the admin's usage export. Progress goes to standard error."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="start", required=True, metavar="DAY", help="First day included (UTC).")
        parser.add_argument("--to", dest="end", required=True, metavar="DAY", help="Last day included (UTC).")
        parser.add_argument(
            "--granularity", default="hour", help="minute, hour or day: one row per customer, operation and that."
        )
        parser.add_argument("--format", default="csv", help="csv, xlsx or json (default csv).")
        parser.add_argument(
            "--customer", action="append", default=[], metavar="ID", help="Only this customer; repeat for several."
        )
        parser.add_argument(
            "--operation", action="append", default=[], metavar="NAME", help="Only this operation; repeat for several."
        )
        parser.add_argument(
            "--service", action="append", default=[], metavar="NAME", help="Only this calling service; repeatable."
        )
        parser.add_argument(
            "--api-key", action="append", default=[], metavar="PREFIX", help="Only this API key (prefix); repeatable."
        )
        parser.add_argument(
            "--output", metavar="FILE", help="Write here (replaced only once complete); standard output if absent."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        form = UsageExportForm(
            data={
                "start": options["start"],
                "end": options["end"],
                "granularity": options["granularity"],
                "format": options["format"],
                "customers": "\n".join(options["customer"]),
                "operations": "\n".join(options["operation"]),
                "services": "\n".join(options["service"]),
                "api_keys": "\n".join(options["api_key"]),
            }
        )
        if not form.is_valid():
            raise CommandError(_problems(form))
        filters, fmt = form.filters(), form.cleaned_data["format"]
        output = Path(options["output"]) if options["output"] else None
        if output is None and fmt == "xlsx":
            raise CommandError("XLSX is a binary file: give --output FILE.")
        if output is not None and not output.parent.is_dir():
            raise CommandError(f"--output: the folder {output.parent} does not exist.")

        total = usage_report_count(rows=usage_report_rows(filters=filters))
        bar_options = {"total": total, "unit": " rows", "desc": "export", "mininterval": BAR_REDRAW_S}
        with tqdm(file=self.stderr._out, **bar_options) as bar:

            def progress(done: int) -> None:
                bar.update(done - bar.n)

            try:
                written = self._write(filters, fmt, output, progress)
            except BrokenPipeError:
                # The reader of a pipe stopped early (`| head`): stop too, quietly, like any Unix tool.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise SystemExit(1) from None
            bar.update(written - bar.n)
        where = str(output) if output else "standard output"
        self.stderr.write(f"Wrote {written:,} rows as {FORMATS[fmt].label} to {where}.")

    def _write(self, filters: UsageFilters, fmt: str, output: Path | None, progress: Progress) -> int:
        if output is None:
            stream = self.stdout._out
            target = stream.buffer if hasattr(stream, "buffer") else cast(BinaryIO, _TextTarget(stream))
            written = usage_report_write(
                rows=usage_report_rows(filters=filters),
                filters=filters,
                fmt=fmt,
                target=target,
                progress=progress,
                every=PROGRESS_EVERY,
            )
            target.flush()
            return written
        try:
            return usage_report_to_path(filters=filters, fmt=fmt, path=output, progress=progress, every=PROGRESS_EVERY)
        except OSError as error:
            raise CommandError(f"Cannot write {output}: {error.strerror or error}") from None


class _TextTarget:
    """A binary file over a text stream (what tests and some wrappers give as stdout)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        self.stream.write(data.decode())
        return len(data)

    def flush(self) -> None:
        self.stream.flush()


def _problems(form: UsageExportForm) -> str:
    lines = ["The export options are not valid:"]
    for field, errors in form.errors.items():
        option = OPTION_BY_FIELD.get(field, f"--{field}")
        lines += [f"  {option}: {error}" for error in errors]
    return "\n".join(lines)
