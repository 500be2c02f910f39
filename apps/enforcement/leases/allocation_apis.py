"""/api/v1/customers/{customer}/allocations/{limit}: PUT a service's own count of live objects, GET when it was last
resynced (allocations.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.api.fields import parse_path_text
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.parsing import MAX_CUSTOMER_LENGTH, MAX_LIMIT_NAME_LENGTH
from apps.enforcement.leases import allocation_docs
from apps.enforcement.leases.allocations import allocations_get, allocations_set
from apps.enforcement.leases.parsing import parse_allocations
from apps.limits.snapshot_holder import snapshot_current


class AllocationsSetApi(EnforcementApi):
    @extend_schema(
        parameters=[serializers.CUSTOMER_PATH, serializers.LIMIT_PATH],
        request=serializers.AllocationsInputSerializer,
        **allocation_docs.ALLOCATIONS,
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

    @extend_schema(parameters=[serializers.CUSTOMER_PATH, serializers.LIMIT_PATH], **allocation_docs.ALLOCATIONS_GET)
    def get(self, request: Request, customer: str, limit: str) -> Response:
        parse_path_text("customer", customer, MAX_CUSTOMER_LENGTH)
        parse_path_text("limit", limit, MAX_LIMIT_NAME_LENGTH)
        body = allocations_get(
            principal=request_principal(request), customer=customer, limit_name=limit, snapshot=snapshot_current()
        )
        return Response(body)
