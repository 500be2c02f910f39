"""Usage rows as CSV, written row by row so an export of any size streams in constant memory.

Columns, in order: customer, operation, bucket (ISO 8601, UTC, with offset), allowed, denied,
shadow_denied, costs. `costs` is one JSON object per row (unit -> admitted cost, keys sorted):
units differ between operations and are not known before the last row, so they are not spread over
columns. A text cell that a spreadsheet would run as a formula (it starts with = + - @ or a tab or
carriage return) is prefixed with a single quote.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable, Iterator

from apps.usage.models import UsageBucket

CSV_COLUMNS = ("customer", "operation", "bucket", "allowed", "denied", "shadow_denied", "costs")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def usage_row_dict(row: UsageBucket) -> dict[str, object]:
    """One row as the API shows it (the JSON format, and the CSV columns)."""
    return {
        "customer": row.customer,
        "operation": row.operation,
        "bucket": row.bucket.astimezone(dt.UTC).isoformat(),
        "allowed": row.allowed,
        "denied": row.denied,
        "shadow_denied": row.shadow_denied,
        "costs": row.costs,
    }


def usage_csv_lines(rows: Iterable[UsageBucket]) -> Iterator[str]:
    """The header line, then one line per row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(CSV_COLUMNS)
    for row in rows:
        yield line(
            (
                _cell(row.customer),
                _cell(row.operation),
                row.bucket.astimezone(dt.UTC).isoformat(),
                row.allowed,
                row.denied,
                row.shadow_denied,
                json.dumps(row.costs, sort_keys=True, separators=(",", ":")),
            )
        )


def _cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text
