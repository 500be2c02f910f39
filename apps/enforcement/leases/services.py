"""Concurrency leases: acquire a slot (with the operation's other limits checked in the same step),
renew it while working, release it when done. An expired lease stops counting on its own. An allocation (a
lease acquired with `"ttl_s": null`) holds its slot until released, for quotas on live objects; renewing it
changes nothing, and the service resynchronizes the count from its own database (allocations.py).

A lease is a session: the operation's session_time limits count the time it is held (engine/store/sessions.py),
refuse to acquire (a 429 decision) and to renew (429 `session_time_spent`, with `retry_after_ms`) once their
window's time is spent, and usage records the seconds held per minute.

Leases live in Redis; allocations are kept in PostgreSQL too (durable.py), so a Redis loss forgets none. Every call
goes through store.engine_call, so with Redis dead a lease call answers as fast as a check does: acquire follows its
limits' policies, renew answers 503, release is a no-op (the slot frees itself when its TTL runs out).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import DatabaseError

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import ApplicationError, InvalidInput, NotFound
from apps.enforcement.counters.guarded_store import engine_call
from apps.enforcement.decisions.outcomes import CheckOutcome, outcome_of_decision
from apps.enforcement.decisions.parsing import MAX_LEASE_TTL_S
from apps.enforcement.decisions.services import check_resolve, outcome_of_rule, request_id_reused, specs_of
from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.fallback import FallbackDecision, StoreUnavailable, fallback_check
from apps.enforcement.leases.durable import allocation_dropped, allocation_kept
from apps.enforcement.leases.parsing import ALLOCATION
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, Decision, IdempotencyKeyReused, KeyLayout, Store, lease_owner
from apps.engine.keys import limit_name_of
from apps.engine.registry import LEASE_SET
from apps.engine.types import SessionTimeSpent
from apps.limits.algorithms import counts_time, holds_leases
from apps.limits.models import Mode, StoreFailurePolicy
from apps.limits.resolution import resolve
from apps.limits.snapshot import LimitConfig, Snapshot

logger = logging.getLogger(__name__)

DEFAULT_LEASE_TTL_S = 300
# Reads the counter key a lease id names; the prefix is never used (an id holds the key without it).
_LEASE_IDS = KeyLayout("lease-id")
# What acquiring answers: the decision, the lease id (None when refused or without Redis), its expiry.
Acquired = tuple[Decision | FallbackDecision, str | None, int]


class SessionTimeExhausted(ApplicationError):
    """A renewal refused by a session_time limit: the lease keeps its expiry; `fields.retry_after_ms` says when
    the window ends and a renewal (or a new lease) would pass, null when the limit allows no time at all."""

    code = "session_time_spent"
    status_code = 429


@dataclass(frozen=True, slots=True)
class LeaseOutcome:
    outcome: CheckOutcome
    lease_id: str | None
    expires_at_ms: int | None


def _lease_ttl(requested: int | None, limit: LimitConfig) -> int | None:
    """The ttl in seconds; None for an allocation (ALLOCATION requested), which holds its slot until released."""
    return None if requested == ALLOCATION else _capped_ttl(requested, limit)


def _capped_ttl(requested: int | None, limit: LimitConfig | None) -> int:
    """The ttl in seconds of acquiring or renewing a lease on concurrency `limit` (None: the default). The limit's
    period is the longest a lease may run, each renewal included; without a period, or for a lease whose limit
    is gone, MAX_LEASE_TTL_S."""
    longest = (limit.period_s if limit else None) or MAX_LEASE_TTL_S
    ttl = requested if requested is not None else min(DEFAULT_LEASE_TTL_S, longest)
    if not 1 <= ttl <= longest:
        of_limit = f" for limit {limit.name}" if limit else ""
        raise InvalidInput(
            f"ttl_s must be between 1 and {longest} seconds{of_limit}.", fields={"ttl_s": [f"1..{longest}"]}
        )
    return ttl


def _lease_limit(lease_id: str, snapshot: Snapshot) -> LimitConfig | None:
    """The concurrency limit whose slot `lease_id` holds (its id names the counter key), or None if it is gone."""
    target = _LEASE_IDS.lease_target(lease_id)
    if target is None:
        return None
    named = snapshot.limits_named(limit_name_of(target[0].split(":", 1)[1]), LEASE_SET.name)
    return named[0] if named else None


def _slot_and_others(limits: tuple[LimitConfig, ...], operation: str) -> tuple[LimitConfig, list[LimitConfig]]:
    """The tightest concurrency limit (the slot a lease takes) and the operation's other limits."""
    slots = sorted((limit for limit in limits if holds_leases(limit.algorithm)), key=lambda lm: lm.quantity)
    if not slots:
        # 404: the request is well-formed; what it asks for (a concurrency slot) does not exist.
        raise NotFound(
            f"No concurrency limit applies to {operation} for this customer; use /api/v1/check instead.",
            code="no_concurrency_limit",
        )
    return slots[0], [limit for limit in limits if not holds_leases(limit.algorithm)]


def _refuse_timeless_sessions(limits: tuple[LimitConfig, ...], ttl_s: int | None) -> None:
    """An allocation never expires: it cannot count against a session_time limit, whose time it would fill."""
    if ttl_s == ALLOCATION and any(counts_time(limit.algorithm) for limit in limits):
        raise InvalidInput(
            "This operation counts session time, so its leases must expire: give ttl_s in seconds.",
            fields={"ttl_s": ["An allocation (null) cannot count session time."]},
        )


def lease_acquire(*, principal: ApiPrincipal, item: CheckItem, ttl_s: int | None, snapshot: Snapshot) -> LeaseOutcome:
    principal.authorize(item.customer, item.operation)
    # No slot to take is refused before anything moves, the day's budget of new names included.
    ahead = resolve(snapshot, item, now_ms=time.time_ns() // 1_000_000, api_key_prefix=principal.prefix)
    if ahead.action is None:
        _slot_and_others(ahead.limits, item.operation)
        _refuse_timeless_sessions(ahead.limits, ttl_s)
    resolved = check_resolve(principal, item, snapshot)
    if resolved.resolution.action is not None:
        # An allow rule bypasses limits: nothing to hold, so no lease id; a deny rule refuses.
        return LeaseOutcome(outcome_of_rule(resolved), None, None)
    slot, others = _slot_and_others(resolved.resolution.limits, item.operation)
    ttl, item = _lease_ttl(ttl_s, slot), resolved.item

    specs = [limit_spec_of(slot), *specs_of(others)]

    def acquire(store: Store) -> Acquired:
        return store.lease_acquire(item, specs[0], ttl, specs[1:])

    def without_store() -> Acquired:
        return _lease_without_store(item, [slot, *others]), None, 0

    try:
        decision, lease_id, expires_at = engine_call(acquire, fallback=without_store, customer=item.customer)
        if isinstance(decision, Decision):  # the store decided (a failure policy's decision counted itself)
            decision_tally(item, specs, decision)
    except IdempotencyKeyReused:
        # The id answered a check, or a lease of another ttl: nothing was taken (engine/store/plan.py).
        raise request_id_reused() from None
    if lease_id is not None and ttl is None and not (isinstance(decision, Decision) and decision.replayed):
        _keep_allocation(lease_id, item.customer, slot.name)
    outcome = outcome_of_decision(decision, [slot, *others], item=item)
    return LeaseOutcome(outcome, lease_id, expires_at if lease_id else None)


def _keep_allocation(lease_id: str, customer: str, limit: str) -> None:
    """Keep an allocation Redis admitted in PostgreSQL (durable.py). If it cannot be kept, it is given back: an
    allocation a Redis loss would forget is not granted (503, nothing held)."""
    try:
        allocation_kept(lease_id=lease_id, customer=customer, limit=limit)
    except DatabaseError as error:
        logger.warning("Allocation %s could not be kept in PostgreSQL, so it is given back: %s", lease_id, error)
        engine_call(lambda store: store.lease_release(lease_id), fallback=lambda: None)
        raise StoreUnavailable(
            "The allocation could not be recorded durably, so it was not taken; retry shortly."
        ) from None


def _lease_without_store(item: CheckItem, limits: list[LimitConfig]) -> FallbackDecision:
    """Without Redis only `open` limits can admit (and there is no slot to hold): their fallback decision."""
    enforced = [limit for limit in limits if limit.mode == Mode.ENFORCE]
    if any(limit.on_store_failure != StoreFailurePolicy.OPEN for limit in enforced):
        raise StoreUnavailable("The counter store is unreachable, so no concurrency slot can be taken; retry shortly.")
    return fallback_check(item, limits)


def _authorize_lease(principal: ApiPrincipal, lease_id: str) -> None:
    owner = lease_owner(lease_id)
    if owner is None:
        raise NotFound("No such lease.", code="lease_not_found")
    principal.authorize(owner)


def lease_renew(*, principal: ApiPrincipal, lease_id: str, ttl_s: int | None, snapshot: Snapshot) -> int:
    _authorize_lease(principal, lease_id)
    # Held to the cap acquiring is held to (nothing moves when refused): else a renewal outlives the limit's period.
    ttl = _capped_ttl(ttl_s, _lease_limit(lease_id, snapshot))
    try:
        expires_at = engine_call(lambda store: store.lease_renew(lease_id, ttl), fallback=_renew_without_store)
    except SessionTimeSpent as spent:
        raise SessionTimeExhausted(
            "The session time this lease counts against is spent for the current window; the lease runs until "
            "its current expiry and cannot be renewed before the window ends.",
            fields={"retry_after_ms": spent.retry_after_ms},
        ) from None
    if expires_at is None:
        raise NotFound("This lease has expired or was released; acquire a new one.", code="lease_not_found")
    return expires_at


def _renew_without_store() -> int | None:
    raise StoreUnavailable("The counter store is unreachable; the lease cannot be renewed now.")


def lease_release(*, principal: ApiPrincipal, lease_id: str) -> None:
    if lease_owner(lease_id) is None:
        return  # idempotent: an unknown id is already "released"
    _authorize_lease(principal, lease_id)
    # Without Redis, releasing is skipped: the slot frees itself when the lease's TTL runs out (an allocation's, kept
    # in Redis, when the service next resyncs). Its durable copy goes either way: a rebuild does not bring it back.
    engine_call(lambda store: store.lease_release(lease_id), fallback=lambda: None)
    allocation_dropped(lease_id=lease_id)
