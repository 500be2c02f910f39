"""The columns every export format shares, and how one usage row becomes their values."""

from __future__ import annotations

import datetime as dt
import json

from apps.usage.models import COUNTERS, UsageBucket

# (name, what it holds): the one list the writers, the module docstring and the admin form page follow.
COLUMN_DOCS: tuple[tuple[str, str], ...] = (
    ("customer", "The customer id, as the checks named it."),
    ("operation", "The operation name."),
    ("bucket", "Start of the minute, hour or UTC day: ISO 8601 in UTC with the offset: 2026-03-04T11:00:00+00:00."),
    ("allowed", "Checks admitted in the bucket, an access rule's allow included (integer)."),
    ("denied", "Checks refused by a limit: over it, or a cost it can never admit (integer)."),
    ("shadow_denied", "Admitted checks that a shadow-mode limit would have refused; a part of allowed (integer)."),
    (
        "degraded",
        "Checks decided without Redis, by the limits' failure policies; each is also counted in allowed or "
        "denied, so this is the part of them decided while Redis was away (integer).",
    ),
    (
        "rule_denied",
        "Checks refused by an access rule (a deny rule, or an inactive customer); not counted in denied (integer).",
    ),
    (
        "unavailable",
        "Checks refused with 503 because a limit's failure policy is `closed` and Redis was away; not counted "
        "in denied (integer). Every check is counted once in allowed, denied, rule_denied or unavailable.",
    ),
    (
        "costs",
        'Admitted cost per unit, e.g. {"records": 4000, "requests": 10}: a JSON object with sorted keys '
        "(a JSON text cell in CSV and XLSX, an object in JSON). Units differ between operations, so they "
        "are not spread over columns.",
    ),
    (
        "session_ms",
        "Milliseconds the customer's leases on the operation were held within the bucket, measured by the counter "
        "store from the leases' lifetimes (acquired to released, or to expiry), not reported by the caller; "
        "0 for an operation without leases (integer). After costs, so the columns before it keep their positions.",
    ),
    (
        "service",
        "The calling service's name, from the API key the checks were made with; empty for checks made without a "
        "service key (the admin's session) and for usage counted before services were recorded. After session_ms, "
        "so the columns before it keep their positions.",
    ),
    (
        "api_key",
        "The prefix of the API key the checks were made with (the part before the dot shown in the admin, never the "
        "secret); empty as for service. Rows differ by customer, operation, bucket, service and api_key.",
    ),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _ in COLUMN_DOCS)
# The decision counters, in order, between `bucket` and `costs`: the formats write these as numbers.
COUNT_COLUMNS: tuple[str, ...] = COUNTERS
# The integer columns after `costs`, written as numbers too.
TIME_COLUMNS: tuple[str, ...] = ("session_ms",)
# The text columns after those: who made the checks (appended last, so earlier columns keep their positions).
CALLER_COLUMNS: tuple[str, ...] = ("service", "api_key")


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
        "degraded": row.degraded,
        "rule_denied": row.rule_denied,
        "unavailable": row.unavailable,
        "costs": row.costs,
        "session_ms": row.session_ms,
        "service": row.service,
        "api_key": row.api_key,
    }
