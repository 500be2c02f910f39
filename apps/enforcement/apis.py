"""The service API for decisions. Thin: parse, call one service, render."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from apps.common import metrics
from apps.common.exceptions import InvalidInput, PayloadTooLarge
from apps.common.renderers import OrjsonResponse
from apps.enforcement import serializers
from apps.enforcement.authentication import request_principal
from apps.enforcement.authz import authz_evaluate, forwarded_request
from apps.enforcement.headers import ratelimit_headers, retry_after_header
from apps.enforcement.lease_parsing import parse_lease, parse_renew
from apps.enforcement.leases import SessionTimeExhausted, lease_acquire, lease_release, lease_renew
from apps.enforcement.parsing import (
    INVALID_MESSAGE,
    MAX_CUSTOMER_LENGTH,
    MAX_LEASE_ID_LENGTH,
    BatchTooLarge,
    parse_batch,
    parse_check,
    parse_path_text,
)
from apps.enforcement.schema_docs import decisions as decision_docs
from apps.enforcement.schema_docs import leases as lease_docs
from apps.enforcement.selectors import customer_limits_effective
from apps.enforcement.service_api import ServiceApi
from apps.enforcement.services import (
    BATCH_REJECTED,
    COST_EXCEEDS_LIMIT,
    DENIED,
    OVER_LIMIT,
    CheckOutcome,
    check_batch_evaluate,
    check_evaluate,
    outcome_message,
)
from apps.engine.reference.concurrency import FOREVER
from apps.limits.snapshot import Snapshot
from apps.limits.snapshot_holder import snapshot_current

STATUS_BY_CODE = {"OK": 200, OVER_LIMIT: 429, COST_EXCEEDS_LIMIT: 429, DENIED: 403, BATCH_REJECTED: 429}
# The decision metric's outcomes (apps/common/metrics.OUTCOMES): an item refused only because its atomic batch
# was is counted as over a limit.
METRIC_OUTCOME = {BATCH_REJECTED: OVER_LIMIT}


def outcome_body(outcome: CheckOutcome) -> dict[str, Any]:
    return {
        "allowed": outcome.allowed,
        "code": outcome.code,
        "retry_after_ms": outcome.retry_after_ms,
        "delay_ms": outcome.delay_ms,
        "degraded": outcome.degraded,
        "message": outcome_message(outcome),
        "warnings": list(outcome.warnings),
        "limits": [
            {
                "name": r.name,
                "algorithm": r.algorithm,
                "unit": r.unit,
                "limit": r.limit,
                "remaining": r.remaining,
                "reset_ms": r.reset_ms,
                "shadow": r.shadow,
                "over": r.over,
                "mode": "hybrid" if r.name in outcome.hybrid else "exact",
            }
            for r in outcome.limits
        ],
    }


def observe(endpoint: str, started: float, decided: list[tuple[str, CheckOutcome]], snapshot: Snapshot) -> None:
    """Count the decisions by operation and outcome (added up first: a batch costs a few increments),
    and time the request once. Operations the snapshot does not know are counted as "other"."""
    known = snapshot.operations
    if len(decided) == 1:  # a single check: count it as it is
        ((operation, outcome),) = decided
        metrics.decision_recorded(
            operation=metrics.operation_label(operation, known),
            outcome=METRIC_OUTCOME.get(outcome.code, outcome.code),
            shadow_denied=any(result.shadow and result.over for result in outcome.limits),
            degraded=outcome.degraded,
            seconds=time.perf_counter() - started,
            endpoint=endpoint,
        )
        return
    totals: dict[tuple[str, str], list[int]] = {}
    for operation, outcome in decided:
        code = METRIC_OUTCOME.get(outcome.code, outcome.code)
        counts = totals.setdefault((metrics.operation_label(operation, known), code), [0, 0, 0])
        counts[0] += 1
        counts[1] += any(result.shadow and result.over for result in outcome.limits)
        counts[2] += outcome.degraded
    for (operation, code), (count, shadow_denied, degraded) in totals.items():
        metrics.decision_counted(
            operation=operation, outcome=code, count=count, shadow_denied=shadow_denied, degraded=degraded
        )
    metrics.check_timed(endpoint=endpoint, seconds=time.perf_counter() - started)


def outcome_headers(outcome: CheckOutcome) -> dict[str, str]:
    headers = ratelimit_headers(outcome.limits, outcome.windows_s)
    if outcome.code == OVER_LIMIT:
        headers.update(retry_after_header(outcome.retry_after_ms))
    return headers


class CheckApi(ServiceApi):
    @extend_schema(request=serializers.CheckInputSerializer, **decision_docs.CHECK)
    def post(self, request: Request) -> HttpResponse:
        started = time.perf_counter()
        item = parse_check(request.data)
        snapshot = snapshot_current()
        outcome = check_evaluate(principal=request_principal(request), item=item, snapshot=snapshot)
        observe("check", started, [(item.operation, outcome)], snapshot)
        return OrjsonResponse(outcome_body(outcome), STATUS_BY_CODE[outcome.code], outcome_headers(outcome))


class CheckBatchApi(ServiceApi):
    @extend_schema(request=serializers.BatchInputSerializer, **decision_docs.BATCH)
    def post(self, request: Request) -> HttpResponse:
        started = time.perf_counter()
        try:
            items, mode = parse_batch(request.data)
        except BatchTooLarge as error:
            raise PayloadTooLarge(str(error), code="batch_too_large") from None
        snapshot = snapshot_current()
        outcomes = check_batch_evaluate(principal=request_principal(request), items=items, mode=mode, snapshot=snapshot)
        decided = [(item.operation, outcome) for item, outcome in zip(items, outcomes, strict=True)]
        observe("batch", started, decided, snapshot)
        allowed = sum(outcome.allowed for outcome in outcomes)
        body = {
            "allowed_count": allowed,
            "denied_count": len(outcomes) - allowed,
            "results": [outcome_body(outcome) for outcome in outcomes],
        }
        return OrjsonResponse(body)


def _iso(ms: int | None) -> str | None:
    """An expiry as ISO 8601; None for none, and for an allocation's (it never expires)."""
    if ms is None or ms >= FOREVER:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


class LeaseAcquireApi(ServiceApi):
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


class LeaseRenewApi(ServiceApi):
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


class LeaseReleaseApi(ServiceApi):
    @extend_schema(**lease_docs.LEASE_RELEASE)
    def delete(self, request: Request, lease_id: str) -> Response:
        parse_path_text("lease_id", lease_id, MAX_LEASE_ID_LENGTH)
        lease_release(principal=request_principal(request), lease_id=lease_id)
        return Response(status=204)


class CustomerLimitsApi(ServiceApi):
    @extend_schema(
        parameters=[serializers.CUSTOMER_PATH, serializers.CustomerLimitsQuerySerializer], **lease_docs.CUSTOMER_LIMITS
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


class AuthzApi(ServiceApi):
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
