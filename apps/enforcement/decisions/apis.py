"""The service API for decisions. Thin: parse, call one service, render."""

from __future__ import annotations

import time
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request

from apps.api.authentication import request_principal
from apps.api.renderers import OrjsonResponse
from apps.common import metrics
from apps.common.exceptions import PayloadTooLarge
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import schema_docs as decision_docs
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.headers import ratelimit_headers, retry_after_header
from apps.enforcement.decisions.outcomes import (
    BATCH_REJECTED,
    COST_EXCEEDS_LIMIT,
    DENIED,
    OVER_LIMIT,
    CheckOutcome,
    outcome_message,
)
from apps.enforcement.decisions.parsing import BatchTooLarge, parse_batch, parse_check
from apps.enforcement.decisions.services import check_batch_evaluate, check_evaluate
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


class CheckApi(EnforcementApi):
    @extend_schema(request=serializers.CheckInputSerializer, **decision_docs.CHECK)
    def post(self, request: Request) -> HttpResponse:
        started = time.perf_counter()
        item = parse_check(request.data)
        snapshot = snapshot_current()
        outcome = check_evaluate(principal=request_principal(request), item=item, snapshot=snapshot)
        observe("check", started, [(item.operation, outcome)], snapshot)
        return OrjsonResponse(outcome_body(outcome), STATUS_BY_CODE[outcome.code], outcome_headers(outcome))


class CheckBatchApi(EnforcementApi):
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
