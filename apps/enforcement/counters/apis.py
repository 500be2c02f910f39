"""GET /api/v1/customers/{customer}/limits: the limits in force for a customer, with what remains of each. Thin:
parse, call one selector, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.api.fields import INVALID_MESSAGE, parse_path_text
from apps.common.exceptions import InvalidInput
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.counters import schema_docs as docs
from apps.enforcement.counters.selectors import customer_limits_effective
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.parsing import MAX_CUSTOMER_LENGTH
from apps.limits.snapshot_holder import snapshot_current


class CustomerLimitsApi(EnforcementApi):
    @extend_schema(
        parameters=[serializers.CUSTOMER_PATH, serializers.CustomerLimitsQuerySerializer],
        **docs.CUSTOMER_LIMITS,
    )
    def get(self, request: Request, customer: str) -> Response:
        # A plain dict: DRF reads an empty value in a QueryDict as "not given"; here it is refused like any.
        query = serializers.CustomerLimitsQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        unknown = set(request.query_params) - set(query.fields)
        if unknown:
            raise InvalidInput(INVALID_MESSAGE, fields={name: ["Unknown query parameter."] for name in sorted(unknown)})
        parse_path_text("customer", customer, MAX_CUSTOMER_LENGTH)
        body = customer_limits_effective(
            principal=request_principal(request), customer=customer, snapshot=snapshot_current(), **query.validated_data
        )
        return Response(body)
