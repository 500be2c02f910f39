"""The raw decision log as CSV or JSON lines, streamed: rows are read through a server-side cursor and written
one by one (the command to a file or standard output, the admin as a streaming response).

Columns: at (ISO 8601, UTC, milliseconds), at_ms, then the DecisionEvent columns as stored. Ordered by time.
The CSV follows the usage exports' rule for cells a spreadsheet would run (apps/common/spreadsheets.py): the
customers, limits and counter keys in the log come from callers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from apps.common.spreadsheets import csv_writer
from apps.quality.models import DecisionEvent
from apps.quality.selectors import at_ms_of

FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}
COLUMNS = (
    "slot",
    "entry_id",
    "kind",
    "customer",
    "operation",
    "limit",
    "algorithm",
    "key",
    "cost",
    "quantity",
    "period_ms",
    "burst",
    "window_ms",
    "shadow",
    "mode",
    "instance",
    "lease",
    "expires_ms",
    "prev_window_ms",
    "prev_count",
    "sync_ms",
)
HEADER = ("at", "at_ms", *COLUMNS)
FETCH_ROWS = 2_000


def export_records(rows: QuerySet[DecisionEvent]) -> Iterator[dict[str, Any]]:
    """Each entry of `rows` as a dict of HEADER's columns, in time order, streamed."""
    ordered = rows.order_by("at", "slot", "entry_id").values_list("at", *COLUMNS)
    for values in ordered.iterator(chunk_size=FETCH_ROWS):
        at = values[0]
        record = {"at": at.isoformat(timespec="milliseconds"), "at_ms": at_ms_of(at)}
        record.update(zip(COLUMNS, values[1:], strict=True))
        yield record


def export_lines(records: Iterable[dict[str, Any]], fmt: str) -> Iterator[str]:
    """The text of the export, a line at a time (CSV with a header line, or one JSON object a line)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: csv or jsonl")
    if fmt == "jsonl":
        for record in records:
            yield json.dumps(record, ensure_ascii=False) + "\n"
        return
    line = _Line()
    writer = csv_writer(line)
    writer.writerow(HEADER)
    yield line.take()
    for record in records:
        writer.writerow([_cell(value) for value in record.values()])
        yield line.take()


def export_write(
    rows: QuerySet[DecisionEvent],
    fmt: str,
    write: Callable[[str], Any],
    progress: Callable[[int], None] | None = None,
    every: int = 10_000,
) -> int:
    """Write the export of `rows` through `write`; how many entries. `progress(n)` every `every` entries."""
    written = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal written
        for record in export_records(rows):
            yield record
            written += 1
            if progress is not None and written % every == 0:
                progress(written)

    for text in export_lines(counted(), fmt):
        write(text)
    return written


def _cell(value: Any) -> Any:
    """Booleans as true/false, like the JSON lines."""
    return ("true" if value else "false") if isinstance(value, bool) else value


class _Line:
    """A file for csv_writer that hands back what was written since the last take()."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return len(text)

    def take(self) -> str:
        text, self._parts = "".join(self._parts), []
        return text
