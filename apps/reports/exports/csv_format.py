"""CSV: a header line, then one line per row (RFC 4180, CRLF line ends, UTF-8 without a byte order mark)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import BinaryIO

from apps.common.spreadsheets import csv_writer
from apps.reports.exports.columns import USAGE_COLUMNS, Column
from apps.usage.models import UsageBucket


def usage_csv_lines(rows: Iterable[UsageBucket], columns: Sequence[Column] = USAGE_COLUMNS) -> Iterator[str]:
    """The header line, then one line per row: a cell per column."""
    buffer = io.StringIO()
    writer = csv_writer(buffer)  # every cell a spreadsheet could run is defused there

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(column.name for column in columns)
    for row in rows:
        yield line(column.cell(row) for column in columns)


def usage_csv_write(rows: Iterable[UsageBucket], target: BinaryIO, info: Mapping[str, object]) -> None:
    """The file form of usage_csv_lines; `info` (the filters) is not written: CSV has no room for it."""
    for line in usage_csv_lines(rows):
        target.write(line.encode())
