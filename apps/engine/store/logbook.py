"""The decision log's entries as the Python stores make them: what check.lua, the lease set's fragment,
lease_renew.lua and lease_release.lua write (decision_log.py has the fields), for MemoryStore and decide.py.

Decisions: one entry per audited limit of an item that is not a dry run nor replayed (nor a Redis Cluster
slot's part of a check), "allow" when the item was admitted, else "deny". Leases: "acquire" for every lease
granted (on the leased limit, audited or not), "renew", "release", and "expire" for a lease found expired
when the store drops it.
"""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from urllib.parse import unquote

from apps.engine.decision_log import (
    ACQUIRE,
    ALLOW,
    DENY,
    EXPIRE,
    MODE_EXACT,
    LogEntry,
    log_key_of,
)
from apps.engine.registry import LEASE_SET
from apps.engine.store.plan import ItemPlan, LimitPlan


def _window(limit: LimitPlan, now: int) -> int:
    spec = limit.spec
    # The audit reads a window algorithm's window start (check.lua writes the same).
    if spec.entry.audit != "window":
        return 0
    if spec.entry.calendar_windows:
        return limit.params(now).window[0]
    return now - now % spec.period_ms


def _limit_entry(plan: ItemPlan, limit: LimitPlan, now: int, instance: str, kind: str) -> LogEntry:
    spec, item = limit.spec, plan.item
    burst = spec.capacity if spec.entry.burst else 0
    return LogEntry(
        "",
        now,
        kind,
        item.customer,
        item.operation,
        spec.name,
        spec.algorithm,
        limit.keys[0],
        limit.cost,
        spec.quantity,
        spec.period_ms,
        burst,
        _window(limit, now),
        spec.shadow,
        MODE_EXACT,
        instance,
    )


def item_entries(plan: ItemPlan, allowed: bool, lease_expires: int, now: int, instance: str) -> list[LogEntry]:
    """The entries of one decided item (not a dry run, not replayed), in check.lua's order."""
    entries: list[LogEntry] = []
    if plan.item.dry_run or not plan.logged:
        return entries
    for position, limit in enumerate(plan.limits):
        if limit.spec.audit:
            entries.append(_limit_entry(plan, limit, now, instance, ALLOW if allowed else DENY))
        if position == 0 and plan.lease is not None and allowed and lease_expires > 0:
            acquired = _limit_entry(plan, limit, now, instance, ACQUIRE)
            entries.append(replace(acquired, lease=plan.lease[0], expires_ms=lease_expires))
    return entries
