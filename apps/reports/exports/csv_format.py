"""CSV: a header line, then one line per row (RFC 4180, CRLF line ends, UTF-8 without a byte order mark)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

from apps.reports.exports.columns import (
    CALLER_COLUMNS,
    COLUMNS,
    COUNT_COLUMNS,
    TIME_COLUMNS,
    bucket_text,
    costs_text,
)
from apps.usage.models import UsageBucket

# A text cell that a spreadsheet opening the file would run as a formula starts with one of these.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def usage_csv_lines(rows: Iterable[UsageBucket]) -> Iterator[str]:
    """The header line, then one line per row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(COLUMNS)
    for row in rows:
        yield line(
            (
                defused(row.customer),
                defused(row.operation),
                bucket_text(row),
                *(getattr(row, name) for name in COUNT_COLUMNS),
                costs_text(row.costs),
                *(getattr(row, name) for name in TIME_COLUMNS),
                *(defused(getattr(row, name)) for name in CALLER_COLUMNS),
            )
        )


def usage_csv_write(rows: Iterable[UsageBucket], target: BinaryIO, info: Mapping[str, object]) -> None:
    """The file form of usage_csv_lines; `info` (the filters) is not written: CSV has no room for it."""
    for line in usage_csv_lines(rows):
        target.write(line.encode())


def defused(text: str) -> str:
    """`text` with a single quote in front if a spreadsheet would run it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
