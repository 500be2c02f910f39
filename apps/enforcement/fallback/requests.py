"""Request ids while Redis is away: a retry gets the decision the caller received, and is counted once."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.enforcement.models import FallbackRequest
from apps.engine import CheckItem


def request_replayed(item: CheckItem) -> bool | None:
    """The decision already given to `item`'s request id (allowed or not), or None."""
    if not item.request_id or item.dry_run:
        return None
    found = FallbackRequest.objects.filter(customer=item.customer, request_id=item.request_id).first()
    return found.allowed if found else None


def request_remember(item: CheckItem, allowed: bool) -> None:
    """Remember the decision `item`'s caller received (inside the caller's transaction when it has one)."""
    if not item.request_id or item.dry_run:
        return
    try:
        with transaction.atomic():
            FallbackRequest.objects.create(customer=item.customer, request_id=item.request_id, allowed=allowed)
    except IntegrityError:
        pass  # a concurrent retry recorded it first; its decision stands
