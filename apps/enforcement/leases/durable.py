"""Allocations kept in PostgreSQL, as durably as counters (seed 002's scenario 3: objects kept, not requests).

Redis decides: an allocation is a member of its concurrency set with no expiry, and the set has no TTL while it holds
one, so allocations never lapse while held. PostgreSQL keeps a copy (AllocationSet per customer and counter,
Allocation per member), written only after Redis admitted or changed something, so a refused or timed-out request
writes nothing here either:
- an admitted allocation (lease acquired with `"ttl_s": null`) is added (services.lease_acquire);
- a release deletes it (any lease: the id does not say whether it was an allocation; one indexed DELETE);
- a resync replaces the customer's members on the counter with what allocations.lua answers, and stamps
  `resynced_at` (allocations.py).

After Redis loses its data, a lease set is rebuilt from this copy before anything is decided against it: check.lua
asks for it like a durable counter's seed (a missing set while the epoch is not warm: apps/engine/store/seeds.py,
seeding.usage_seeds answers from here), so does allocations.lua before a resync, and the warm-up writes every kept
set before it marks the epoch warm (counters/warm_up.py). Leases with an expiry are not kept: one lost with Redis
frees its slot early, as if it expired.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Count

from apps.enforcement.models import Allocation, AllocationSet
from apps.engine import KeyLayout, Resynced

logger = logging.getLogger(__name__)

# Reads the counter a lease id names; the prefix is never used (an id holds the key without it).
_LEASE_IDS = KeyLayout("lease-id")
READ_CHUNK = 10_000


def _target(lease_id: str) -> tuple[str, str] | None:
    """(counter without the store prefix, member) named by `lease_id`, or None when it names no lease."""
    target = _LEASE_IDS.lease_target(lease_id)
    if target is None:
        return None
    key, member = target
    return key.split(":", 1)[1], member


def allocation_kept(*, lease_id: str, customer: str, limit: str) -> None:
    """Keep the allocation Redis just admitted as `lease_id`. Raises DatabaseError (the caller gives it back)."""
    target = _target(lease_id)
    if target is None:
        return
    counter, member = target
    with transaction.atomic():
        kept, _ = AllocationSet.objects.get_or_create(counter=counter, customer=customer, defaults={"limit": limit})
        Allocation.objects.bulk_create(
            [Allocation(counter=counter, member=member, allocation_set=kept)], ignore_conflicts=True
        )


def allocation_dropped(*, lease_id: str) -> None:
    """Forget `lease_id` if it was a kept allocation (a release); logs, never raises, when PostgreSQL fails: the
    member would come back only with a rebuild after a Redis loss, and the service's next resync drops it."""
    target = _target(lease_id)
    if target is None:
        return
    counter, member = target
    try:
        Allocation.objects.filter(counter=counter, member=member).delete()
    except DatabaseError as error:
        logger.warning("Released allocation %s could not be forgotten in PostgreSQL: %s", lease_id, error)


def allocations_resynced(*, customer: str, limit: str, resynced: Resynced, at: datetime) -> AllocationSet:
    """Keep what a resync left `customer` holding on the counter, and when. Raises DatabaseError."""
    wanted = set(resynced.members)
    with transaction.atomic():
        kept, _ = AllocationSet.objects.update_or_create(
            counter=resynced.counter, customer=customer, defaults={"limit": limit, "resynced_at": at}
        )
        held = set(Allocation.objects.filter(allocation_set=kept).values_list("member", flat=True))
        gone = held - wanted
        if gone:
            Allocation.objects.filter(allocation_set=kept, member__in=gone).delete()
        Allocation.objects.bulk_create(
            [Allocation(counter=resynced.counter, member=member, allocation_set=kept) for member in wanted - held],
            ignore_conflicts=True,
        )
    return kept


def allocation_sets(*, customer: str, limit: str) -> list[dict[str, Any]]:
    """`customer`'s kept allocation sets of `limit`: counter, how many it holds, when last resynced (None: never)."""
    sets = AllocationSet.objects.filter(customer=customer, limit=limit).annotate(held=Count("allocations"))
    return [{"counter": s.counter, "held": s.held, "resynced_at": s.resynced_at} for s in sets.order_by("counter")]


def allocations_of(counters: Sequence[str]) -> list[list[str]]:
    """The members kept for each counter (a lease set's seed: check.lua rebuilds the set from them)."""
    found: dict[str, list[str]] = {counter: [] for counter in counters}
    rows = Allocation.objects.filter(counter__in=list(found)).order_by("member")
    for counter, member in rows.values_list("counter", "member"):
        found[counter].append(member)
    return [found[counter] for counter in counters]


def allocations_per_counter() -> Iterator[tuple[str, list[str]]]:
    """(counter, its members) for every counter holding a kept allocation (the warm-up writes them all)."""
    rows = Allocation.objects.order_by("counter", "member").values_list("counter", "member")
    counter: str | None = None
    members: list[str] = []
    for name, member in rows.iterator(chunk_size=READ_CHUNK):
        if name != counter:
            if counter is not None:
                yield counter, members
            counter, members = name, []
        members.append(member)
    if counter is not None:
        yield counter, members
