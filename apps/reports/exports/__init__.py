"""Usage rows as CSV, XLSX or JSON, written row by row from one row iterator, in constant memory.

Every format has the same columns, in this order (COLUMN_DOCS in columns.py is the source of this list
and of the table on the admin export page):

  customer       the customer id, as the checks named it
  operation      the operation name
  bucket         start of the minute, hour or UTC day: ISO 8601 in UTC with its offset, 2026-03-04T11:00:00+00:00
  allowed        checks admitted in the bucket, an access rule's allow included (integer)
  denied         checks refused by a limit: over it, or a cost it can never admit (integer)
  shadow_denied  admitted checks that a shadow-mode limit would have refused; a part of allowed (integer)
  degraded       checks decided without Redis, by the limits' failure policies; each is also counted
                 in allowed or denied: the part of them decided while Redis was away (integer)
  rule_denied    checks refused by an access rule (a deny rule, or an inactive customer); not in denied (integer)
  unavailable    checks refused with 503 because a limit's failure policy is `closed` and Redis was away;
                 not in denied (integer)
  costs          admitted cost per unit, a JSON object with sorted keys, e.g. {"records":4000,"requests":10}.
                 Units differ between operations and are not known before the last row, so they are
                 not spread over columns.
  session_ms     milliseconds the customer's leases on the operation were held within the bucket, measured
                 by the counter store from the leases' lifetimes (acquired to released, or to expiry), not a
                 cost the caller reports; 0 where no lease was held (integer). It comes last, after costs,
                 so every column before it keeps the position it had before session time was exported.
  service        the calling service's name, from the API key the checks were made with; empty for checks
                 made without a service key (the admin's session) and for usage counted before services were
                 recorded. Appended after session_ms, like api_key, so no earlier column moved.
  api_key        the prefix of that API key (never its secret); empty as for service

Every check is counted once, in allowed, denied, rule_denied or unavailable; session_ms is time, not
checks. A row is one customer x operation x service x api_key x bucket; rows come ordered by bucket, customer,
operation, service, api_key. Numbers are the stored integers, exactly:

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

from apps.reports.exports.columns import COLUMN_DOCS, COLUMNS, usage_row_dict
from apps.reports.exports.csv_format import usage_csv_lines, usage_csv_write
from apps.reports.exports.json_format import usage_json_chunks, usage_json_write
from apps.reports.exports.xlsx_format import usage_xlsx_write
from apps.usage.models import UsageBucket

__all__ = [
    "COLUMNS",
    "COLUMN_DOCS",
    "CSV_COLUMNS",
    "FORMATS",
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
