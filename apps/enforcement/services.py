"""Deciding checks: authorize, resolve against the snapshot, one engine call, shape the outcome.

No database query on this path: config comes from the in-process snapshot, counters from one
Redis round trip per check or per batch.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from apps.apikeys.selectors import ApiPrincipal
from apps.common import metrics
from apps.common.background import BackgroundRecorder
from apps.common.exceptions import Forbidden
from apps.customers.services import customers_record_seen
from apps.enforcement.breaker import CircuitBreaker
from apps.enforcement.fallback import FallbackDecision, fallback_check
from apps.enforcement.parsing import CheckRequest
from apps.enforcement.resolution import CheckTarget, Resolution, resolve
from apps.enforcement.specs import limit_spec_of, window_seconds
from apps.enforcement.store import engine_store
from apps.engine import CheckItem, Decision, LimitResult
from apps.limits.models import Algorithm, RuleAction
from apps.limits.snapshot import LimitConfig
from apps.limits.snapshot_holder import snapshot_current

logger = logging.getLogger(__name__)
OK, OVER_LIMIT, DENIED = "OK", "OVER_LIMIT", "DENIED"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    allowed: bool
    code: str
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]
    windows_s: dict[str, int]
    degraded: bool = False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def check_authorize(principal: ApiPrincipal, customer: str, operation: str | None = None) -> None:
    """Refuse (403) a customer-bound key naming another customer, or an operation its service may not use."""
    if not principal.may_use_customer(customer):
        raise Forbidden("This API key is bound to another customer.", code="forbidden_customer")
    if operation is not None and not principal.may_use_operation(operation):
        raise Forbidden(f"This API key may not be used for operation {operation}.", code="forbidden_operation")


def check_resolve(principal: ApiPrincipal, request: CheckRequest) -> Resolution:
    """What applies to this check; an unknown customer is remembered, to be recorded off the hot path."""
    target = CheckTarget(
        customer=request.customer,
        operation=request.operation,
        resource=request.resource,
        attributes=request.attributes,
        ip=request.ip,
        api_key_prefix=principal.prefix,
    )
    resolution = resolve(snapshot_current(), target, now_ms=_now_ms())
    if resolution.customer is None:
        unknown_customers.record(request.customer, True)
    return resolution


def counted_limits(resolution: Resolution) -> list[LimitConfig]:
    # Concurrency limits are spent by leases, not by checks.
    return [limit for limit in resolution.limits if limit.algorithm != Algorithm.CONCURRENCY]


def engine_item_of(request: CheckRequest, timezone: str) -> CheckItem:
    return CheckItem(
        customer=request.customer,
        operation=request.operation,
        resource=request.resource,
        attributes=request.attributes,
        costs=request.costs,
        ip=request.ip,
        request_id=request.request_id,
        dry_run=request.dry_run,
        timezone=timezone,
    )


def outcome_of_rule(resolution: Resolution) -> CheckOutcome:
    allowed = resolution.action == RuleAction.ALLOW
    return CheckOutcome(allowed, OK if allowed else DENIED, 0 if allowed else None, (), {})


def outcome_of_decision(decision: Decision, limits: Sequence[LimitConfig]) -> CheckOutcome:
    return CheckOutcome(
        allowed=decision.allowed,
        code=OK if decision.allowed else OVER_LIMIT,
        retry_after_ms=decision.retry_after_ms,
        limits=decision.limits,
        windows_s={limit.name: window_seconds(limit) for limit in limits},
    )


def degraded_outcome(decision: FallbackDecision, limits: Sequence[LimitConfig]) -> CheckOutcome:
    return CheckOutcome(
        allowed=decision.allowed,
        code=OK if decision.allowed else OVER_LIMIT,
        retry_after_ms=decision.retry_after_ms,
        limits=decision.limits,
        windows_s={limit.name: window_seconds(limit) for limit in limits},
        degraded=True,
    )


def store_failed(error: RedisError) -> None:
    # The limits' failure policies decide instead (open / closed / database / local): see fallback.py.
    redis_breaker.record_failure()
    metrics.redis_error_recorded(metrics.redis_error_kind(error))
    logger.warning("Redis failed (%s: %s); deciding by failure policy", type(error).__name__, error)


def decide(item: CheckItem, limits: Sequence[LimitConfig]) -> CheckOutcome:
    """One engine round trip, or the failure policies when Redis is unreachable or the breaker is open."""
    if redis_breaker.allow():
        try:
            decision = engine_store().check(item, [limit_spec_of(limit) for limit in limits])
        except RedisError as error:
            store_failed(error)
        else:
            redis_breaker.record_success()
            return outcome_of_decision(decision, limits)
    return degraded_outcome(fallback_check(item, limits), limits)


def check_evaluate(*, principal: ApiPrincipal, request: CheckRequest) -> CheckOutcome:
    check_authorize(principal, request.customer, request.operation)
    resolution = check_resolve(principal, request)
    if resolution.action is not None:
        return outcome_of_rule(resolution)
    return decide(engine_item_of(request, resolution.timezone), counted_limits(resolution))


def check_batch_evaluate(*, principal: ApiPrincipal, requests: Sequence[CheckRequest], mode: str) -> list[CheckOutcome]:
    """Every item is authorized before any counter moves; then one engine call decides the rest."""
    for request in requests:
        check_authorize(principal, request.customer, request.operation)
    resolutions = [check_resolve(principal, request) for request in requests]
    ruled = {index: outcome_of_rule(r) for index, r in enumerate(resolutions) if r.action is not None}
    if mode == "atomic" and any(not outcome.allowed for outcome in ruled.values()):
        return [_refused_by_rule(ruled.get(index)) for index in range(len(requests))]
    pending = [index for index in range(len(requests)) if index not in ruled]
    limits = {index: counted_limits(resolutions[index]) for index in pending}
    pairs = [
        (engine_item_of(requests[i], resolutions[i].timezone), [limit_spec_of(limit) for limit in limits[i]])
        for i in pending
    ]
    decided = dict(zip(pending, _decide_batch(pairs, [limits[i] for i in pending], mode), strict=True))
    return [ruled.get(index) or decided[index] for index in range(len(requests))]


def _decide_batch(pairs: list[Any], limits: list[list[LimitConfig]], mode: str) -> list[CheckOutcome]:
    if not pairs:
        return []
    if redis_breaker.allow():
        try:
            decisions = engine_store().check_batch(pairs, mode)  # type: ignore[arg-type]
        except RedisError as error:
            store_failed(error)
        else:
            redis_breaker.record_success()
            return [outcome_of_decision(d, lm) for d, lm in zip(decisions, limits, strict=True)]
    # Degraded: each item by its limits' policies, in order. An atomic batch admits all or none, but
    # in-process (`local`) slots taken by items before a refused one are not given back.
    outcomes = [degraded_outcome(fallback_check(item, lm), lm) for (item, _), lm in zip(pairs, limits, strict=True)]
    if mode == "atomic" and not all(outcome.allowed for outcome in outcomes):
        return [dataclasses.replace(o, allowed=False, code=OVER_LIMIT, retry_after_ms=None) for o in outcomes]
    return outcomes


def _refused_by_rule(outcome: CheckOutcome | None) -> CheckOutcome:
    """An atomic batch with a denied item admits nothing; every item says DENIED."""
    return outcome if outcome and not outcome.allowed else CheckOutcome(False, DENIED, None, (), {})


unknown_customers = BackgroundRecorder(
    "unknown-customers",
    write=lambda seen: customers_record_seen(external_ids=seen),
    interval_s=lambda: settings.QUOTA_BOOKKEEPING_FLUSH_S,
)


redis_breaker = CircuitBreaker(failure_threshold=settings.QUOTA_BREAKER_FAILURES, open_s=settings.QUOTA_BREAKER_OPEN_S)
