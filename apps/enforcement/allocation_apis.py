"""PUT /api/v1/customers/{customer}/allocations/{limit}: a service's own count of live objects (allocations.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.enforcement import serializers
from apps.enforcement.allocations import allocations_set
from apps.enforcement.authentication import request_principal
from apps.enforcement.lease_parsing import parse_allocations
from apps.enforcement.parsing import MAX_CUSTOMER_LENGTH, MAX_LIMIT_NAME_LENGTH, parse_path_text
from apps.enforcement.service_api import ServiceApi
from apps.limits.snapshot_holder import snapshot_current

EXAMPLE = OpenApiExample(
    "Streams held in the service's database",
    value={"held": 12},
    request_only=True,
    description="The service counted 12 live streams for this account: the quota now holds 12 allocations.",
)


class AllocationsSetApi(ServiceApi):
    @extend_schema(
        parameters=[serializers.CUSTOMER_PATH, serializers.LIMIT_PATH],
        request=serializers.AllocationsInputSerializer,
        responses={
            **serializers.ERROR_RESPONSES,
            404: serializers.ErrorSerializer,
            503: serializers.ErrorSerializer,
            200: serializers.AllocationsSerializer,
        },
        examples=[EXAMPLE],
        summary="Resynchronize a customer's allocations from the service's own count",
        description='Allocations are leases acquired with `"ttl_s": null`: each holds a slot of a concurrency '
        "limit until it is released (objects created and kept, such as streams). The service's database is the "
        "truth: this sets how many allocations the customer holds now, adding placeholders or dropping "
        "allocations (placeholders first), so a lost release or objects that predate the quota are counted "
        "right. Leases that expire are not touched. A key bound to a customer may set only its own.",
    )
    def put(self, request: Request, customer: str, limit: str) -> Response:
        parse_path_text("customer", customer, MAX_CUSTOMER_LENGTH)
        parse_path_text("limit", limit, MAX_LIMIT_NAME_LENGTH)
        held, resource = parse_allocations(request.data)
        body = allocations_set(
            principal=request_principal(request),
            customer=customer,
            limit_name=limit,
            held=held,
            resource=resource,
            snapshot=snapshot_current(),
        )
        return Response(body)
