"""CSV: a header line, then one line per row (RFC 4180, CRLF line ends, UTF-8 without a byte order mark)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

from apps.common.spreadsheets import csv_writer
from apps.reports.exports.columns import (
    CALLER_COLUMNS,
    COLUMNS,
    COUNT_COLUMNS,
    TIME_COLUMNS,
    bucket_text,
    costs_text,
)
from apps.usage.models import UsageBucket


def usage_csv_lines(rows: Iterable[UsageBucket]) -> Iterator[str]:
    """The header line, then one line per row."""
    buffer = io.StringIO()
    writer = csv_writer(buffer)  # every cell a spreadsheet could run is defused there

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(COLUMNS)
    for row in rows:
        yield line(
            (
                row.customer,
                row.operation,
                bucket_text(row),
                *(getattr(row, name) for name in COUNT_COLUMNS),
                costs_text(row.costs),
                *(getattr(row, name) for name in TIME_COLUMNS),
                *(getattr(row, name) for name in CALLER_COLUMNS),
            )
        )


def usage_csv_write(rows: Iterable[UsageBucket], target: BinaryIO, info: Mapping[str, object]) -> None:
    """The file form of usage_csv_lines; `info` (the filters) is not written: CSV has no room for it."""
    for line in usage_csv_lines(rows):
        target.write(line.encode())
