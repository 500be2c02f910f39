"""GET /api/v1/usage: usage rows of one granularity over a time range, as JSON pages or one CSV stream.

Query parameters (anything else is refused with 400):
  customer     required for a key bound to a customer, and must be that customer (403 otherwise);
               a service-wide key may leave it out to read every customer.
  operation    optional; a key limited to some operations reads only those (403 for another).
  from, to     ISO 8601 with an offset (Z or ±hh:mm, + written %2B); rows with from <= bucket < to.
  granularity  minute | hour | day (default hour): the UsageMinute, UsageHour or UsageDay table.
               One request covers at most 7 days of minutes or 400 days of hours (400 beyond: narrow
               the range); days have no cap.
  format       json (default) | csv.
  cursor       the `next` token of the previous JSON page.
JSON: {"granularity", "from", "to", "rows": [{customer, operation, bucket, allowed, denied,
shadow_denied, costs}], "next"}, rows ordered by bucket, customer, operation, at most USAGE_PAGE_SIZE
per page; `next` is null on the last page, else the cursor of the following one (keyset pagination:
pages stay consistent while rows are added). CSV streams every row at once; its columns are described
in apps/usage/exports.py. Errors are always JSON in the one error shape.
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from apps.common.exceptions import InvalidInput
from apps.enforcement.apis import INVALID_MESSAGE, ServiceApi
from apps.enforcement.serializers import ERROR_RESPONSES
from apps.usage.exports import usage_csv_lines, usage_row_dict
from apps.usage.selectors import UsageQuery, usage_page, usage_rows
from apps.usage.serializers import UsageListSerializer, UsageQuerySerializer, cursor_encode

USAGE_PAGE_SIZE = 10_000
CSV_CHUNK_ROWS = 2000


class JsonWhateverTheFormat(BaseContentNegotiation):
    """`format` is this endpoint's own parameter (DRF would read it as a renderer choice), and errors
    are always JSON: the one renderer is used whatever the query or Accept header say."""

    def select_parser(self, request: Request, parsers: list[Any]) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class UsageListApi(ServiceApi):
    """Usage rows of one table over a time range: JSON pages with a `next` cursor, or one CSV stream."""

    content_negotiation_class = JsonWhateverTheFormat

    @extend_schema(
        parameters=[UsageQuerySerializer],
        responses={
            **ERROR_RESPONSES,
            (200, "application/json"): UsageListSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
        },
        summary="Usage per customer and operation, by minute, hour or day (JSON pages or CSV)",
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse:
        params = _parsed(request)
        query = UsageQuery(
            granularity=params["granularity"],
            start=params["from"],
            end=params["to"],
            customer=params.get("customer"),
            operation=params.get("operation"),
        )
        if params["format"] == "csv":
            return _csv_response(query, usage_rows(principal=request.user, query=query))
        page = usage_page(principal=request.user, query=query, after=params.get("cursor"), size=USAGE_PAGE_SIZE)
        body = {
            "granularity": query.granularity,
            "from": query.start.isoformat(),
            "to": query.end.isoformat(),
            "rows": [usage_row_dict(row) for row in page.rows],
            "next": cursor_encode(page.next) if page.next else None,
        }
        return Response(body)


def _parsed(request: Request) -> dict[str, Any]:
    serializer = UsageQuerySerializer(data=request.query_params)
    unknown = set(request.query_params) - set(serializer.fields)
    if unknown:
        raise InvalidInput(INVALID_MESSAGE, fields={name: ["Unknown query parameter."] for name in sorted(unknown)})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _csv_response(query: UsageQuery, rows: Any) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        usage_csv_lines(rows.iterator(chunk_size=CSV_CHUNK_ROWS)), content_type="text/csv; charset=utf-8"
    )
    stamp = f"{query.start:%Y%m%dT%H%M%SZ}-{query.end:%Y%m%dT%H%M%SZ}"
    response["Content-Disposition"] = f'attachment; filename="usage-{query.granularity}-{stamp}.csv"'
    return response
