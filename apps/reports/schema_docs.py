"""GET /api/v1/usage in the API docs: a description for callers, examples of a JSON page and a CSV answer, and
the error answers from the one shared place (apps.api.schema_errors)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from drf_spectacular.utils import OpenApiExample

from apps.api.schema_errors import error_example, error_response, error_responses
from apps.reports.exports.columns import usage_row_dict
from apps.reports.exports.csv_format import usage_csv_lines
from apps.usage.models import UsageHour

# Two stored rows, shown as the API and the CSV export write them: every column (columns.py) is in the examples,
# a column added there included (its stored value, the field's default here).
_ROW = UsageHour(
    customer="acct-1",
    operation="PutRecords",
    bucket=dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC),
    allowed=3412,
    denied=57,
    costs={"bytes": 894435328, "records": 1706000, "requests": 3412},
    service="ingest-gateway",
    api_key="qp_3f9a1c07",
)
_SCALING_ROW = UsageHour(
    customer="acct-1",
    operation="ModifyShardCount",
    bucket=_ROW.bucket,
    allowed=10,
    denied=3,
    costs={"requests": 10},
    service="control-plane",
    api_key="qp_b41e92d5",
)
ROW = usage_row_dict(_ROW)
SCALING_ROW = usage_row_dict(_SCALING_ROW)
# Text cells are quoted, numbers are not (apps/common/spreadsheets.py: no text cell can start a formula).
CSV = "".join(usage_csv_lines([_SCALING_ROW]))

# The summary stays beside the view (apis.py); this is the rest of what the docs show.
USAGE: dict[str, Any] = {
    "description": "What was allowed and refused, bucket by bucket, for billing, dashboards and support. Each "
    "row is one customer × operation × calling service × API key × bucket: checks `allowed`, `denied` by a "
    "limit, `rule_denied` by an access rule, `unavailable` (503 while a closed limit had no counter store), "
    "with `shadow_denied` and `degraded` as parts of them, the admitted `costs` per unit and `session_ms` of "
    "leases held.\n\n"
    "Give `from` and `to` (ISO 8601 with an offset; write `+` as `%2B`) and a `granularity` (minute: at most 7 "
    "days per request; hour: 400 days; day: any range). Narrow with `customer`, `operation`, `service` and "
    "`api_key`, each repeatable, e.g. `GET /api/v1/usage?customer=acct-1&operation=PutRecords"
    "&from=2026-03-02T00:00:00Z&to=2026-03-03T00:00:00Z&granularity=hour`. A key bound to a customer must name "
    "that customer and sees only it (403 otherwise).\n\n"
    "`format=json` (default) answers pages of at most 10,000 rows: pass `next` as `cursor` for the following "
    "page until it is null. `format=csv` streams every row at once; `format=xlsx` sends one workbook, refused "
    "(400 naming `format`) past its row cap. Usage reaches these tables within seconds of the checks (each API "
    "process writes what it decided every few seconds); `possibly_incomplete` names the buckets a process killed "
    "outright may have left short.",
    "examples": [
        OpenApiExample(
            "acct-1's 09:00 hour, one page",
            value={
                "granularity": "hour",
                "from": "2026-03-02T00:00:00+00:00",
                "to": "2026-03-03T00:00:00+00:00",
                "rows": [SCALING_ROW, ROW],
                "next": None,
                "possibly_incomplete": [],
            },
            response_only=True,
            status_codes=["200"],
        ),
        OpenApiExample("The same as CSV", value=CSV, response_only=True, status_codes=["200"], media_type="text/csv"),
    ],
}
ERRORS = {
    **error_responses(401, 413, 429, 503),
    400: error_response(
        400,
        "A parameter is missing, malformed or unknown, `to` is not after `from`, the range is too long for the "
        "granularity, or an XLSX would be too large: `fields` names the parameter.",
        [
            error_example(
                "Range too long for minutes (400)",
                "invalid",
                "The request is not valid; see fields.",
                {"to": ["At most 7 days of minute rows per request: narrow the range."]},
            )
        ],
    ),
    403: error_response(
        403,
        "A key bound to a customer asked for another customer (or for all), or a key limited to some operations "
        "asked for another one.",
    ),
}
