"""What a decision looks like to its caller: the body of one outcome, its status and headers, and the decision
metrics. Read by every door that answers decisions (check, batch, leases, the gateway's authz)."""

from __future__ import annotations

import time
from typing import Any

from apps.common import metrics
from apps.enforcement.decisions.headers import ratelimit_headers, retry_after_header
from apps.enforcement.decisions.outcomes import (
    BATCH_REJECTED,
    COST_EXCEEDS_LIMIT,
    DENIED,
    OVER_LIMIT,
    CheckOutcome,
    outcome_message,
    outcome_subject,
)
from apps.limits.snapshot import Snapshot

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
                "subject": outcome_subject(outcome, r.name),
            }
            for r in outcome.limits
        ],
    }


def outcome_headers(outcome: CheckOutcome) -> dict[str, str]:
    headers = ratelimit_headers(outcome.limits, outcome.windows_s)
    if outcome.code == OVER_LIMIT:
        headers.update(retry_after_header(outcome.retry_after_ms))
    return headers


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
