"""Request ids while Redis is away: a retry gets the decision the caller received, and is counted once.

The retry may come after Redis is back (a client whose read timed out while a degraded answer was on its way), and
Redis never saw the id. So while any id decided without Redis is young enough to replay (the 10 minutes Redis keeps
one), a check whose ids were all decided so is answered from here, not decided again; a process asks PostgreSQL
whether there are any such ids at most once a second (`requests_recent`), so otherwise a check pays nothing.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from apps.enforcement.models import FallbackRequest
from apps.engine import CheckItem, IdempotencyKeyReused
from apps.engine.keys import IDEMPOTENCY_TTL_MS
from apps.engine.store.plan import request_fingerprint, usage_costs

REPLAY_WINDOW = dt.timedelta(milliseconds=IDEMPOTENCY_TTL_MS)  # as long as Redis keeps a stored decision
RECENT_ASKED_EVERY_S = 1.0


class _Recent:
    """requests_recent's last answer and when it was asked, shared by this process's threads."""

    value = False
    asked_at = float("-inf")


_recent = _Recent()


def request_replayed(item: CheckItem) -> bool | None:
    """The decision already given to `item`'s request id (allowed or not) within the replay window, or None. Raises
    IdempotencyKeyReused when the id was given for a request with other parameters (or `item` is a dry run reusing
    a real request's id), as the Redis path does (engine/store/plan.py)."""
    if not item.request_id:
        return None
    return _replayed(item, _young().filter(customer=item.customer, request_id=item.request_id).first())


def requests_replayed(items: Sequence[CheckItem]) -> list[bool] | None:
    """With Redis answering: the decisions given without Redis to `items`, when every item has one; else None, and
    they are decided as usual. One query for all the items. Raises IdempotencyKeyReused (the indexes) as
    request_replayed does."""
    if not all(item.request_id for item in items) or not requests_recent():
        return None
    rows = _young().filter(customer__in={item.customer for item in items}, request_id__in={i.request_id for i in items})
    kept: dict[tuple[str, str | None], FallbackRequest] = {(row.customer, row.request_id): row for row in rows}
    found: list[bool | None] = []
    reused: list[int] = []
    for index, item in enumerate(items):
        try:
            found.append(_replayed(item, kept.get((item.customer, item.request_id))))
        except IdempotencyKeyReused:
            reused.append(index)
    if reused:
        raise IdempotencyKeyReused(tuple(reused))
    return None if any(allowed is None for allowed in found) else [bool(allowed) for allowed in found]


def _young() -> QuerySet[FallbackRequest]:
    """The ids decided within the replay window: older ones are Redis's to decide, as its stored decisions lapse."""
    return FallbackRequest.objects.filter(created_at__gt=timezone.now() - REPLAY_WINDOW)


def _replayed(item: CheckItem, found: FallbackRequest | None) -> bool | None:
    if found is None:
        return None
    # Rows written before fingerprints were kept have none: they replay, as they did.
    if item.dry_run or (found.fingerprint and found.fingerprint != _fingerprint(item)):
        raise IdempotencyKeyReused((0,))
    return found.allowed


def requests_recent() -> bool:
    """Were request ids decided without Redis within the replay window (by any process)? Asked at most once a
    second; PostgreSQL away answers no (nothing could be replayed from it)."""
    now = time.monotonic()
    if now - _recent.asked_at >= RECENT_ASKED_EVERY_S:
        _recent.asked_at = now
        try:
            _recent.value = _young().exists()
        except DatabaseError:
            _recent.value = False
    return _recent.value


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
    _recent.value = True  # this process replays at once; the others learn it within a second


def _fingerprint(item: CheckItem) -> str:
    return request_fingerprint(item, usage_costs(item), None)
