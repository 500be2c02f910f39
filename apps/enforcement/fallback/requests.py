"""Request ids while Redis is away: a retry gets the decision the caller received, and is counted once."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.enforcement.models import FallbackRequest
from apps.engine import CheckItem, IdempotencyKeyReused
from apps.engine.store.plan import request_fingerprint, usage_costs


def request_replayed(item: CheckItem) -> bool | None:
    """The decision already given to `item`'s request id (allowed or not), or None. Raises
    IdempotencyKeyReused when the id was given for a request with other parameters (or `item` is a dry
    run reusing a real request's id), as the Redis path does (engine/store/plan.py)."""
    if not item.request_id:
        return None
    found = FallbackRequest.objects.filter(customer=item.customer, request_id=item.request_id).first()
    if found is None:
        return None
    # Rows written before fingerprints were kept have none: they replay, as they did.
    if item.dry_run or (found.fingerprint and found.fingerprint != _fingerprint(item)):
        raise IdempotencyKeyReused((0,))
    return found.allowed


def request_remember(item: CheckItem, allowed: bool) -> None:
    """Remember the decision `item`'s caller received (inside the caller's transaction when it has one)."""
    if not item.request_id or item.dry_run:
        return
    try:
        with transaction.atomic():
            FallbackRequest.objects.create(
                customer=item.customer, request_id=item.request_id, allowed=allowed, fingerprint=_fingerprint(item)
            )
    except IntegrityError:
        pass  # a concurrent retry recorded it first; its decision stands


def _fingerprint(item: CheckItem) -> str:
    return request_fingerprint(item, usage_costs(item), None)
