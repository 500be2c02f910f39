"""The columns every export format shares, and how one usage row becomes their values."""

from __future__ import annotations

import datetime as dt
import json

from apps.usage.models import UsageBucket

# (name, what it holds): the one list the writers, the module docstring and the admin form page follow.
COLUMN_DOCS: tuple[tuple[str, str], ...] = (
    ("customer", "The customer id, as the checks named it."),
    ("operation", "The operation name."),
    ("bucket", "Start of the minute, hour or UTC day: ISO 8601 in UTC with the offset: 2026-03-04T11:00:00+00:00."),
    ("allowed", "Checks admitted in the bucket (integer)."),
    ("denied", "Checks refused: over a limit or denied by a rule (integer)."),
    ("shadow_denied", "Admitted checks that a shadow-mode limit would have refused (integer)."),
    (
        "costs",
        'Admitted cost per unit, e.g. {"records": 4000, "requests": 10}: a JSON object with sorted keys '
        "(a JSON text cell in CSV and XLSX, an object in JSON). Units differ between operations, so they "
        "are not spread over columns.",
    ),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _ in COLUMN_DOCS)


def bucket_text(row: UsageBucket) -> str:
    return row.bucket.astimezone(dt.UTC).isoformat()


def costs_text(costs: dict[str, int]) -> str:
    """Costs as compact JSON with sorted keys: the same row always gives the same text."""
    return json.dumps(costs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def usage_row_dict(row: UsageBucket) -> dict[str, object]:
    """One row as the API and the JSON export show it."""
    return {
        "customer": row.customer,
        "operation": row.operation,
        "bucket": bucket_text(row),
        "allowed": row.allowed,
        "denied": row.denied,
        "shadow_denied": row.shadow_denied,
        "costs": row.costs,
    }
