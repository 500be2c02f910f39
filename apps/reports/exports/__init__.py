"""Usage rows as CSV, XLSX or JSON, written row by row from one row iterator, in constant memory.

Every format has the same columns, in the same order: USAGE_COLUMNS in columns.py, the one list (each entry's
name, meaning, kind and XLSX width), which the API's rows, its schema and the admin export page's table follow
too. They are the row's names (customer, operation, bucket), the reported usage counters of
apps/usage/vocabulary.py, costs, session_ms, then who made the checks (service, api_key); columns added later
come last, so every earlier column keeps its position. Every check is counted once, in allowed, denied,
rule_denied or unavailable; session_ms is time, not checks. A row is one customer x operation x service x api_key
x bucket; rows come ordered by bucket, customer, operation, service, api_key. Numbers are the stored integers,
exactly. Per format:

- CSV (text/csv, UTF-8, no byte order mark, CRLF line ends): a header line, then one line per row;
  `costs` is a JSON text cell. Text cells are in double quotes and numbers bare. A text that a spreadsheet
  would run as a formula (it starts with = + - @, a tab, a line break or NUL) gets a single quote in front;
  nothing else changes (apps/common/spreadsheets.py, the rule of every export).
- XLSX: sheet "usage" holds the header and the rows (past Excel's 1,048,576 rows per sheet they continue
  on "usage 2", "usage 3", ... each with the header again), then sheet "about" lists the filters, the
  row count and these column meanings. Counts and session_ms are number cells (integers below 2**53, which
  a spreadsheet holds exactly; a larger one would be written as text rather than rounded); `bucket` and
  `costs` are text cells. Text is always stored as text, so a name starting with = is never run as a
  formula and needs no quote in its value (it has the quote-prefix style, so it stays text when edited);
  control characters XML cannot hold become U+FFFD.
- JSON (application/json, UTF-8): one object, the filters first, then "rows": a list of objects with the
  columns above as keys, `costs` as a JSON object, counts and session_ms as JSON integers:
  {"granularity": "hour", "from": "...", "to": "...", "customers": [...], "operations": [...],
   "services": [...], "api_keys": [...], "generated": "...", "rows": [{"customer": ..., ...}, ...]}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from apps.reports.exports.columns import COLUMN_DOCS, COLUMNS, USAGE_COLUMNS, Column, usage_row_dict
from apps.reports.exports.csv_format import usage_csv_lines, usage_csv_write
from apps.reports.exports.json_format import usage_json_chunks, usage_json_write
from apps.reports.exports.xlsx_format import usage_xlsx_write
from apps.usage.models import UsageBucket

__all__ = [
    "COLUMNS",
    "COLUMN_DOCS",
    "CSV_COLUMNS",
    "FORMATS",
    "USAGE_COLUMNS",
    "Column",
    "ExportFormat",
    "export_filename",
    "usage_csv_lines",
    "usage_export_write",
    "usage_json_chunks",
    "usage_row_dict",
]

CSV_COLUMNS = COLUMNS


@dataclass(frozen=True, slots=True)
class ExportFormat:
    name: str
    label: str
    extension: str
    content_type: str
    write: Callable[[Iterable[UsageBucket], BinaryIO, Mapping[str, object]], None]


FORMATS: dict[str, ExportFormat] = {
    "csv": ExportFormat("csv", "CSV", "csv", "text/csv; charset=utf-8", usage_csv_write),
    "xlsx": ExportFormat(
        "xlsx",
        "XLSX (Excel)",
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        usage_xlsx_write,
    ),
    "json": ExportFormat("json", "JSON", "json", "application/json", usage_json_write),
}


def usage_export_write(
    fmt: str, rows: Iterable[UsageBucket], target: BinaryIO, info: Mapping[str, object] | None = None
) -> None:
    """Write `rows` to the binary file `target` in format `fmt` (a key of FORMATS); `info` describes the
    export (filters, time written) in the formats that have room for it."""
    FORMATS[fmt].write(rows, target, info or {})


def export_filename(granularity: str, start: dt.datetime, end: dt.datetime, fmt: str) -> str:
    stamp = f"{start.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}-{end.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}"
    return f"usage-{granularity}-{stamp}.{FORMATS[fmt].extension}"
