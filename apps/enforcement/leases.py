"""Concurrency leases: acquire a slot (with the operation's other limits checked in the same step),
renew it while working, release it when done. An expired lease stops counting on its own."""

from __future__ import annotations

from dataclasses import dataclass

from redis.exceptions import RedisError

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import Forbidden, InvalidInput, NotFound
from apps.enforcement.fallback import StoreUnavailable, fallback_check
from apps.enforcement.parsing import MAX_LEASE_TTL_S, CheckRequest
from apps.enforcement.services import (
    CheckOutcome,
    check_authorize,
    check_resolve,
    degraded_outcome,
    engine_item_of,
    outcome_of_decision,
    outcome_of_rule,
    store_failed,
)
from apps.enforcement.specs import limit_spec_of
from apps.enforcement.store import engine_store
from apps.engine import CheckItem, lease_owner
from apps.limits.models import Algorithm, Mode, StoreFailurePolicy
from apps.limits.snapshot import LimitConfig

DEFAULT_LEASE_TTL_S = 300


@dataclass(frozen=True, slots=True)
class LeaseOutcome:
    outcome: CheckOutcome
    lease_id: str | None
    expires_at_ms: int | None


def _lease_ttl(requested: int | None, limit: LimitConfig) -> int:
    longest = limit.period_s or MAX_LEASE_TTL_S
    ttl = requested if requested is not None else min(DEFAULT_LEASE_TTL_S, longest)
    if not 1 <= ttl <= longest:
        raise InvalidInput(
            f"ttl_s must be between 1 and {longest} seconds for limit {limit.name}.",
            fields={"ttl_s": [f"1..{longest}"]},
        )
    return ttl


def lease_acquire(*, principal: ApiPrincipal, request: CheckRequest, ttl_s: int | None) -> LeaseOutcome:
    check_authorize(principal, request.customer, request.operation)
    resolution = check_resolve(principal, request)
    if resolution.action is not None:
        # An allow rule bypasses limits: nothing to hold, so no lease id; a deny rule refuses.
        return LeaseOutcome(outcome_of_rule(resolution), None, None)
    slots = sorted(
        (lm for lm in resolution.limits if lm.algorithm == Algorithm.CONCURRENCY), key=lambda lm: lm.quantity
    )
    if not slots:
        raise InvalidInput(
            f"No concurrency limit applies to {request.operation} for this customer; use /api/v1/check instead.",
            code="no_concurrency_limit",
        )
    others = [lm for lm in resolution.limits if lm.algorithm != Algorithm.CONCURRENCY]
    ttl = _lease_ttl(ttl_s, slots[0])
    item = engine_item_of(request, resolution.timezone)
    try:
        decision, lease_id, expires_at = engine_store().lease_acquire(
            item, limit_spec_of(slots[0]), ttl, [limit_spec_of(o) for o in others]
        )
    except RedisError as error:
        store_failed(error)
        return _lease_without_store(item, [slots[0], *others])
    return LeaseOutcome(outcome_of_decision(decision, [slots[0], *others]), lease_id, expires_at if lease_id else None)


def _lease_without_store(item: CheckItem, limits: list[LimitConfig]) -> LeaseOutcome:
    """Leases live in Redis: without it only `open` limits can admit (and there is no slot to hold)."""
    enforced = [limit for limit in limits if limit.mode == Mode.ENFORCE]
    if any(limit.on_store_failure != StoreFailurePolicy.OPEN for limit in enforced):
        raise StoreUnavailable("The counter store is unreachable, so no concurrency slot can be taken; retry shortly.")
    return LeaseOutcome(degraded_outcome(fallback_check(item, limits), limits), None, None)


def _authorize_lease(principal: ApiPrincipal, lease_id: str) -> None:
    owner = lease_owner(lease_id)
    if owner is None:
        raise NotFound("No such lease.", code="lease_not_found")
    if not principal.may_use_customer(owner):
        raise Forbidden("This API key is bound to another customer.", code="forbidden_customer")


def lease_renew(*, principal: ApiPrincipal, lease_id: str, ttl_s: int | None) -> int:
    _authorize_lease(principal, lease_id)
    ttl = ttl_s if ttl_s is not None else DEFAULT_LEASE_TTL_S
    if not 1 <= ttl <= MAX_LEASE_TTL_S:
        raise InvalidInput(f"ttl_s must be between 1 and {MAX_LEASE_TTL_S}.", fields={"ttl_s": ["out of range"]})
    try:
        expires_at = engine_store().lease_renew(lease_id, ttl)
    except RedisError as error:
        store_failed(error)
        raise StoreUnavailable("The counter store is unreachable; the lease cannot be renewed now.") from None
    if expires_at is None:
        raise NotFound("This lease has expired or was released; acquire a new one.", code="lease_not_found")
    return expires_at


def lease_release(*, principal: ApiPrincipal, lease_id: str) -> None:
    if lease_owner(lease_id) is None:
        return  # idempotent: an unknown id is already "released"
    _authorize_lease(principal, lease_id)
    try:
        engine_store().lease_release(lease_id)
    except RedisError as error:
        # The slot frees itself when the lease's TTL runs out; releasing is best effort.
        store_failed(error)
