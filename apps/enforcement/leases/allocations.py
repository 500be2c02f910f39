"""Allocation quotas (seed 002's scenario 3: objects created and never deleted, the database as counter).

A lease acquired with `"ttl_s": null` is an allocation: it holds a slot of its concurrency limit until it is
released. A service that counts its live objects in its own database resynchronizes the count now and then
(after a crash that lost a release, or to seed the quota of objects that predate it): allocations_set makes
the customer hold exactly that many allocations in the counter, adding placeholders or dropping its allocations
(placeholders first; the engine lease set model's resync). Leases that expire are left as they are.

A resync is state the caller reports, not a decision the limit bounds, so it is held to the trust boundary:
- it moves only the named customer's own allocations, also on a counter several customers share;
- `held` is at most the limit's quantity for the customer (422 held_over_quantity) and at most MAX_HELD (400), and
  one resync adds or drops at most MAX_RESYNC_CHANGES (422 resync_too_large), so its Redis work stays a few ms;
- a key bound to a customer may not resync a limit shared by several customers (403 shared_limit): its
  placeholders would take slots that the others' decisions count, past what an acquire (bounded by the limit) could.

What the resync leaves is kept in PostgreSQL with its time (durable.py: allocations survive a Redis loss, and
GET on the same path and the admin's allocation sets show when each was last resynced).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import DatabaseError
from django.utils import timezone

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import NotFound, Unprocessable
from apps.enforcement.counters.guarded_store import engine_call
from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.fallback import StoreUnavailable
from apps.enforcement.leases.durable import allocation_sets, allocations_resynced
from apps.enforcement.models import AllocationSet
from apps.engine import CheckItem, LimitSpec, Resynced, ResyncTooLarge
from apps.engine.lease_terms import MAX_RESYNC_CHANGES
from apps.engine.registry import LEASE_SET
from apps.limits.resolution import limit_effective
from apps.limits.snapshot import LimitConfig, Snapshot

logger = logging.getLogger(__name__)


def _concurrency_limit(snapshot: Snapshot, customer: str, name: str) -> LimitConfig:
    """The concurrency limit `name` that applies to `customer` (its plan's or everyone's); 404 otherwise."""
    config = snapshot.customers.get(customer)
    plan = config.plan if config else None
    for limit in snapshot.limits_named(name, LEASE_SET.name):
        if limit.plan in (None, plan):
            return limit
    raise NotFound(
        f"No concurrency limit named {name} applies to this customer; allocations are counted by one.",
        code="unknown_limit",
    )


def _held_within_quantity(held: int, effective: LimitConfig) -> None:
    if held > effective.quantity:
        raise Unprocessable(
            f"held is {held}, more than limit {effective.name} allows this customer ({effective.quantity}).",
            code="held_over_quantity",
            fields={"held": [f"At most {effective.quantity}, the limit's quantity for this customer."]},
        )


def allocations_set(
    *, principal: ApiPrincipal, customer: str, limit_name: str, held: int, resource: str, snapshot: Snapshot
) -> dict[str, Any]:
    """Make `customer`'s counter of concurrency limit `limit_name` (for `resource`, when the limit is keyed by
    it) hold exactly `held` allocations. Raises NotFound, Forbidden (a key bound to another customer or not
    allowed the limit's operation) before anything moves, StoreUnavailable (503) without Redis."""
    principal.authorize(customer)
    limit = _concurrency_limit(snapshot, customer, limit_name)
    principal.authorize(customer, limit.operation)
    principal.authorize_shared_report(limit.name, limit.shared_across_customers)
    overrides = snapshot.overrides_by_customer.get(customer, ())
    effective = limit_effective(limit, overrides, resource=resource, now_ms=time.time_ns() // 1_000_000) or limit
    _held_within_quantity(held, effective)
    config = snapshot.customers.get(customer)
    item = CheckItem(
        customer=customer,
        operation=limit.operation,
        resource=resource,
        timezone=config.timezone if config else "UTC",
        service=principal.service,
        api_key=principal.prefix,
    )
    resynced = _resync_in_redis(item, limit_spec_of(effective), held)
    kept = _keep_resync(customer, limit, resynced)
    return {
        "customer": customer,
        "limit": limit.name,
        "held": held,
        "previous": resynced.before,
        "quantity": effective.quantity,
        "resynced_at": kept.resynced_at,
    }


def _resync_in_redis(item: CheckItem, spec: LimitSpec, held: int) -> Resynced:
    """Set the counter in Redis (allocations.lua); Unprocessable for a resync past MAX_RESYNC_CHANGES."""

    def without_store() -> Resynced:
        raise StoreUnavailable("The counter store is unreachable, so the allocations cannot be set now; retry shortly.")

    try:
        return engine_call(
            lambda store: store.allocations_set(item, spec, held), fallback=without_store, customer=item.customer
        )
    except ResyncTooLarge:
        raise Unprocessable(
            f"This resync would add or drop more than {MAX_RESYNC_CHANGES} allocations at once; nothing was changed. "
            "Release allocations, or resync in steps of at most that many.",
            code="resync_too_large",
            fields={"held": [f"Within {MAX_RESYNC_CHANGES} of what the customer holds now."]},
        ) from None


def _keep_resync(customer: str, limit: LimitConfig, resynced: Resynced) -> AllocationSet:
    """The resynced set's durable copy in PostgreSQL (durable.py), stamped now."""
    try:
        return allocations_resynced(customer=customer, limit=limit.name, resynced=resynced, at=timezone.now())
    except DatabaseError as error:
        # Redis holds the new count; only its durable copy lags. A resync sets a count, so repeating it is safe.
        logger.warning("Resynced allocations of %s on %s could not be kept in PostgreSQL: %s", customer, limit, error)
        raise StoreUnavailable(
            "The allocations were set but could not be recorded durably; repeat the resync shortly."
        ) from None


def allocations_get(*, principal: ApiPrincipal, customer: str, limit_name: str, snapshot: Snapshot) -> dict[str, Any]:
    """What PostgreSQL keeps of `customer`'s allocations on concurrency limit `limit_name`: per counter (one per
    resource when the limit is keyed by it), how many are held and when the service last resynced them."""
    principal.authorize(customer)
    limit = _concurrency_limit(snapshot, customer, limit_name)
    principal.authorize(customer, limit.operation)
    return {"customer": customer, "limit": limit.name, "counters": allocation_sets(customer=customer, limit=limit.name)}
