"""The service API for leases: acquire a slot, renew it, release it. Thin: parse, call one service, render."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.api.fields import parse_path_text
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.answers import STATUS_BY_CODE, observe, outcome_body, outcome_headers
from apps.enforcement.decisions.headers import retry_after_header
from apps.enforcement.decisions.parsing import MAX_LEASE_ID_LENGTH
from apps.enforcement.leases import schema_docs as lease_docs
from apps.enforcement.leases.parsing import parse_lease, parse_renew
from apps.enforcement.leases.services import SessionTimeExhausted, lease_acquire, lease_release, lease_renew
from apps.engine.lease_terms import FOREVER
from apps.limits.snapshot_holder import snapshot_current


def _iso(ms: int | None) -> str | None:
    """An expiry as ISO 8601; None for none, and for an allocation's (it never expires)."""
    if ms is None or ms >= FOREVER:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


class LeaseAcquireApi(EnforcementApi):
    @extend_schema(request=serializers.LeaseInputSerializer, **lease_docs.LEASE_ACQUIRE)
    def post(self, request: Request) -> Response:
        item, ttl_s = parse_lease(request.data)
        started = time.perf_counter()
        snapshot = snapshot_current()
        result = lease_acquire(principal=request_principal(request), item=item, ttl_s=ttl_s, snapshot=snapshot)
        observe("lease", started, [(item.operation, result.outcome)], snapshot)
        body = outcome_body(result.outcome)
        status = STATUS_BY_CODE[result.outcome.code]
        if result.outcome.allowed:
            body = {"lease_id": result.lease_id, "expires_at": _iso(result.expires_at_ms), **body}
            status = 201
        return Response(body, status=status, headers=outcome_headers(result.outcome))


class LeaseRenewApi(EnforcementApi):
    @extend_schema(request=serializers.LeaseRenewInputSerializer, **lease_docs.LEASE_RENEW)
    def post(self, request: Request, lease_id: str) -> Response:
        parse_path_text("lease_id", lease_id, MAX_LEASE_ID_LENGTH)
        ttl_s = parse_renew(request.data)
        try:
            expires_at = lease_renew(
                principal=request_principal(request), lease_id=lease_id, ttl_s=ttl_s, snapshot=snapshot_current()
            )
        except SessionTimeExhausted as spent:
            # The error shape as usual, with the Retry-After a client's back-off reads (like a refused check's).
            response = self.handle_exception(spent)
            for name, value in retry_after_header(spent.fields["retry_after_ms"]).items():
                response[name] = value
            return response
        return Response({"lease_id": lease_id, "expires_at": _iso(expires_at)})


class LeaseReleaseApi(EnforcementApi):
    @extend_schema(**lease_docs.LEASE_RELEASE)
    def delete(self, request: Request, lease_id: str) -> Response:
        parse_path_text("lease_id", lease_id, MAX_LEASE_ID_LENGTH)
        lease_release(principal=request_principal(request), lease_id=lease_id)
        return Response(status=204)
