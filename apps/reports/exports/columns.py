"""The columns every export format and the usage API share: one list of Column entries, and how a usage row
becomes their values.

USAGE_COLUMNS is the one place a column is declared: the CSV header and cells, the XLSX sheets (widths, cells,
the "about" sheet), the JSON rows and the API's rows, the API schema's row (serializers.py) and its examples
(schema_docs.py), and the table on the admin's export page all follow it. A column of data already stored is one
entry here; the counters come from the usage vocabulary (apps/usage/vocabulary.py), so a new reported counter is
a column without an edit here. New columns go last, so readers of the earlier ones find them where they were.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from apps.usage.models import UsageBucket
from apps.usage.vocabulary import COUNTERS

# What a column holds, which says how each format writes it: text (quoted or defused where a spreadsheet could run
# it), the bucket's start (ISO 8601 text), an integer (a number cell), or the costs (a JSON object; JSON text in a
# cell).
TEXT, TIME, COUNT, COSTS = "text", "time", "count", "costs"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: `meaning` is what the export page, the XLSX "about" sheet and (unless `api_help` says
    otherwise: "" for none) the API schema say of it; `width` is its XLSX width; `blank`: text that may be ""."""

    name: str
    meaning: str
    kind: str = COUNT
    width: int = 12
    api_help: str | None = None
    blank: bool = False

    @property
    def help(self) -> str | None:
        """The API schema's description of the field (None: none)."""
        return (self.meaning if self.api_help is None else self.api_help) or None

    def value(self, row: UsageBucket) -> object:
        """The value as the API and the JSON export show it."""
        return bucket_text(row) if self.kind == TIME else getattr(row, self.name)

    def cell(self, row: UsageBucket) -> object:
        """The value as a CSV or XLSX cell holds it (the costs as JSON text)."""
        return costs_text(row.costs) if self.kind == COSTS else self.value(row)


def _counter_column(name: str, meaning: str) -> Column:
    return Column(name, meaning, COUNT, width=max(12, len(name) + 1))


USAGE_COLUMNS: tuple[Column, ...] = (
    Column("customer", "The customer id, as the checks named it.", TEXT, 24, api_help=""),
    Column("operation", "The operation name.", TEXT, 20, api_help=""),
    Column(
        "bucket",
        "Start of the minute, hour or UTC day: ISO 8601 in UTC with the offset: 2026-03-04T11:00:00+00:00.",
        TIME,
        27,
        api_help="Start of the bucket, UTC.",
    ),
    *(_counter_column(counter.name, counter.meaning) for counter in COUNTERS if counter.reported),
    Column(
        "costs",
        'Admitted cost per unit, e.g. {"records": 4000, "requests": 10}: a JSON object with sorted keys '
        "(a JSON text cell in CSV and XLSX, an object in JSON). Units differ between operations, so they "
        "are not spread over columns.",
        COSTS,
        40,
        api_help="Admitted cost per unit.",
    ),
    Column(
        "session_ms",
        "Milliseconds the customer's leases on the operation were held within the bucket, measured by the counter "
        "store from the leases' lifetimes (acquired to released, or to expiry), not reported by the caller; "
        "0 for an operation without leases (integer). After costs, so the columns before it keep their positions.",
    ),
    Column(
        "service",
        "The calling service's name, from the API key the checks were made with; empty for checks made without a "
        "service key (the admin's session) and for usage counted before services were recorded. After session_ms, "
        "so the columns before it keep their positions.",
        TEXT,
        20,
        blank=True,
    ),
    Column(
        "api_key",
        "The prefix of the API key the checks were made with (the part before the dot shown in the admin, never the "
        "secret); empty as for service. Rows differ by customer, operation, bucket, service and api_key.",
        TEXT,
        blank=True,
    ),
)
# (name, meaning) and the names, in order: what the admin's export page and the tests read.
COLUMN_DOCS: tuple[tuple[str, str], ...] = tuple((column.name, column.meaning) for column in USAGE_COLUMNS)
COLUMNS: tuple[str, ...] = tuple(column.name for column in USAGE_COLUMNS)


def bucket_text(row: UsageBucket) -> str:
    return row.bucket.astimezone(dt.UTC).isoformat()


def costs_text(costs: dict[str, int]) -> str:
    """Costs as compact JSON with sorted keys: the same row always gives the same text."""
    return json.dumps(costs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def usage_row_dict(row: UsageBucket, columns: Sequence[Column] = USAGE_COLUMNS) -> dict[str, object]:
    """One row as the API and the JSON export show it."""
    return {column.name: column.value(row) for column in columns}
