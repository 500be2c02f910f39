"""GET /api/v1/usage: usage rows of one granularity over a time range, as JSON pages, a CSV stream or XLSX.

Query parameters (anything else is refused with 400):
  customer     repeat for several customers (at most 100). Required for a key bound to a customer, and
               must then be that customer (403 otherwise); a service-wide key may leave it out to read
               every customer.
  operation    optional, repeatable (at most 100). A key limited to some operations reads only
               those (403 for another). Names are non-empty and hold no control characters (400).
  service      optional, repeatable (at most 100): only the checks these calling services made; an empty
               value selects the checks made without a service key (and usage counted before services were).
  api_key      optional, repeatable: only the checks made with these API keys, by prefix ("" = without one).
  from, to     ISO 8601 with an offset (Z or ±hh:mm, + written %2B); rows with from <= bucket < to.
  granularity  minute | hour | day (default hour): the UsageMinute, UsageHour or UsageDay table.
               One request covers at most 7 days of minutes or 400 days of hours (400 beyond: narrow
               the range); days have no cap.
  format       json (default) | csv | xlsx.
  cursor       the `next` token of the previous JSON page.
JSON: {"granularity", "from", "to", "rows": [...], "next", "possibly_incomplete"}, one row per customer x operation
x service x api_key x bucket, its keys the export columns (USAGE_COLUMNS in apps/reports/exports/columns.py, the one
list), ordered by bucket, customer, operation, service, api_key, at most USAGE_PAGE_SIZE per page; `next` is null on
the last page, else the cursor of the following one (keyset pagination: pages stay consistent while rows are added).
CSV streams every row at once. XLSX is one workbook built before it is sent, so it is refused (400, naming `format`)
beyond XLSX_MAX_ROWS rows: use CSV, or narrow the range. Every format's columns are described in
apps/reports/exports. A JSON download of every row in one document is left to the admin and `manage.py
export_usage`: programs page through the JSON above. Errors are always JSON in the one error shape.
`possibly_incomplete` lists the buckets of the range a process killed outright may have left short (its last round
of usage, a few seconds, never written: apps/usage/services/writers.py); CSV and XLSX answers carry the same list in
the X-Usage-Possibly-Incomplete header, when there is one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.api.fields import INVALID_MESSAGE
from apps.api.views import ServiceApi
from apps.common.exceptions import InvalidInput
from apps.reports import schema_docs as usage_docs
from apps.reports.exports import FORMATS, usage_csv_lines, usage_row_dict
from apps.reports.filters import UsageFilters
from apps.reports.selectors import usage_report_count, usage_report_page, usage_report_rows_for_key
from apps.reports.serializers import XLSX_MAX_ROWS, UsageListSerializer, UsageQuerySerializer, cursor_encode
from apps.reports.services import usage_report_temporary_file
from apps.usage.services.writers import incomplete_buckets

USAGE_PAGE_SIZE = 10_000
CSV_CHUNK_ROWS = 2000
INCOMPLETE_HEADER = "X-Usage-Possibly-Incomplete"


class JsonWhateverTheFormat(BaseContentNegotiation):
    """`format` is this endpoint's own parameter (DRF would read it as a renderer choice), and errors
    are always JSON: the one renderer is used whatever the query or Accept header say."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class UsageListApi(ServiceApi):
    """Usage rows of one table over a time range: JSON pages with a `next` cursor, a CSV stream, or XLSX."""

    content_negotiation_class = JsonWhateverTheFormat

    @extend_schema(
        parameters=[UsageQuerySerializer],
        responses={
            **usage_docs.ERRORS,
            (200, "application/json"): UsageListSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
            (200, FORMATS["xlsx"].content_type): OpenApiTypes.BINARY,
        },
        summary="Usage per customer, operation, calling service and key, by minute, hour or day (JSON, CSV or XLSX)",
        **usage_docs.USAGE,
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse | FileResponse:
        params = _parsed(request)
        filters = UsageFilters(
            granularity=params["granularity"],
            start=params["from"],
            end=params["to"],
            customers=tuple(dict.fromkeys(params.get("customer", ()))),
            operations=tuple(dict.fromkeys(params.get("operation", ()))),
            services=tuple(dict.fromkeys(params.get("service", ()))),
            api_keys=tuple(dict.fromkeys(params.get("api_key", ()))),
        )
        rows = usage_report_rows_for_key(principal=request_principal(request), filters=filters)
        incomplete = _incomplete(filters)
        if params["format"] in ("csv", "xlsx"):
            response = _csv_response(filters, rows) if params["format"] == "csv" else _xlsx_response(filters, rows)
            if incomplete:
                response[INCOMPLETE_HEADER] = ",".join(incomplete)
            return response
        page = usage_report_page(rows=rows, after=params.get("cursor"), size=USAGE_PAGE_SIZE)
        body = {
            "granularity": filters.granularity,
            "from": filters.start.isoformat(),
            "to": filters.end.isoformat(),
            "rows": [usage_row_dict(row) for row in page.rows],
            "next": cursor_encode(page.next) if page.next else None,
            "possibly_incomplete": incomplete,
        }
        return Response(body)


def _incomplete(filters: UsageFilters) -> list[str]:
    """The buckets a process killed outright may have left short (apps/usage/services/writers.py)."""
    buckets = incomplete_buckets(granularity=filters.granularity, start=filters.start, end=filters.end)
    return [moment.isoformat() for moment in buckets]


def _parsed(request: Request) -> dict[str, Any]:
    serializer = UsageQuerySerializer(data=request.query_params)
    unknown = set(request.query_params) - set(serializer.fields)
    if unknown:
        raise InvalidInput(INVALID_MESSAGE, fields={name: ["Unknown query parameter."] for name in sorted(unknown)})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _csv_response(filters: UsageFilters, rows: Any) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        usage_csv_lines(rows.iterator(chunk_size=CSV_CHUNK_ROWS)), content_type=FORMATS["csv"].content_type
    )
    response["Content-Disposition"] = f'attachment; filename="{filters.filename("csv")}"'
    return response


def _xlsx_response(filters: UsageFilters, rows: Any) -> FileResponse:
    if usage_report_count(rows=rows, cap=XLSX_MAX_ROWS) > XLSX_MAX_ROWS:
        raise InvalidInput(
            INVALID_MESSAGE,
            fields={
                "format": [
                    f"More than {XLSX_MAX_ROWS:,} rows: too many for one XLSX answer. "
                    "Use format=csv (it streams any size), or narrow the range."
                ]
            },
        )
    file = usage_report_temporary_file(rows=rows, filters=filters, fmt="xlsx")
    return FileResponse(
        file, as_attachment=True, filename=filters.filename("xlsx"), content_type=FORMATS["xlsx"].content_type
    )
