"""Forward-auth for gateways (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz): a check built from the
request the gateway is about to pass on (authz.py)."""

from __future__ import annotations

import time

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import schema_docs as decision_docs
from apps.enforcement.decisions.answers import STATUS_BY_CODE, observe, outcome_body, outcome_headers
from apps.enforcement.gateway.authz import authz_evaluate, forwarded_request
from apps.limits.snapshot_holder import snapshot_current


class AuthzApi(EnforcementApi):
    """Forward-auth for gateways. Any method answers: nginx, Traefik and Envoy differ in what they send;
    the original method and URI come from their headers (or, for Envoy's path prefix, from the path)."""

    @extend_schema(request=None, **decision_docs.AUTHZ)
    def post(self, request: Request, tail: str = "") -> Response:
        started = time.perf_counter()
        forwarded = forwarded_request(request.META, request.method or "GET", tail)
        snapshot = snapshot_current()
        operation, outcome = authz_evaluate(
            principal=request_principal(request), forwarded=forwarded, snapshot=snapshot
        )
        observe("authz", started, [(operation, outcome)], snapshot)
        return Response(outcome_body(outcome), status=STATUS_BY_CODE[outcome.code], headers=outcome_headers(outcome))

    @extend_schema(exclude=True)
    def _same_as_post(self, request: Request, tail: str = "") -> Response:
        return self.post(request, tail)

    get = put = patch = delete = head = _same_as_post


@extend_schema(exclude=True)
class AuthzPathApi(AuthzApi):
    """Envoy ext_authz (HTTP) appends the original path to /api/v1/authz/."""
