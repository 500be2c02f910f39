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


def member_owner(member: str) -> str:
    """The customer a lease member names ("<b64 customer>.<random>", keys.new_lease)."""
    owner = member.split(".", 1)[0]
    return base64.urlsafe_b64decode(owner + "=" * (-len(owner) % 4)).decode()


def lease_entry(
    prefix: str, kind: str, key: str, member: str, now: int, instance: str, expires: int, usage_base: str | None
) -> LogEntry:
    """A renew or release of lease `member` on concurrency set `key` (usage_base: from its record, or None)."""
    # "<prefix>:u:{<tag>}:<operation>:[s=<service>:][k=<key>:]" (keys.py): the operation is the first part.
    operation = unquote(usage_base.split("}:", 1)[1].split(":", 1)[0]) if usage_base else ""
    limit = unquote(key[len(prefix) + 1 :].split("}:", 1)[1].split(":", 2)[1])
    return LogEntry(
        "",
        now,
        kind,
        member_owner(member),
        operation,
        limit,
        LEASE_SET.name,
        key,
        mode=MODE_EXACT,
        instance=instance,
        lease=member,
        expires_ms=expires,
    )


def expire_entry(key: str, member: str, expires: int, now: int, instance: str) -> LogEntry:
    """An expired lease found by the store as it drops it."""
    return LogEntry("", now, EXPIRE, member_owner(member), key=key, instance=instance, lease=member, expires_ms=expires)


class MemoryLog:
    """MemoryStore's decision log: per stream (decision_log.log_key_of each entry's key), the latest
    `max_per_slot` entries, with ids "<at ms>-<sequence>" as Redis gives them (in order within a stream)."""

    def __init__(self, prefix: str, max_per_slot: int) -> None:
        self._prefix = prefix
        self._max = max_per_slot
        self._streams: dict[str, deque[LogEntry]] = {}
        self._last: tuple[int, int] = (0, -1)

    def add(self, entries: Iterable[LogEntry]) -> None:
        """Append `entries` in order, each to its stream (the oldest of a full stream dropped)."""
        for entry in entries:
            at, sequence = self._last
            self._last = (entry.at_ms, 0) if entry.at_ms > at else (at, sequence + 1)
            stream = log_key_of(self._prefix, entry.key)
            kept = self._streams.get(stream)
            if kept is None:
                kept = self._streams[stream] = deque(maxlen=self._max)
            kept.append(replace(entry, entry_id=f"{self._last[0]}-{self._last[1]}"))

    def streams(self) -> dict[str, list[LogEntry]]:
        """Every stream's entries, oldest first."""
        return {stream: list(entries) for stream, entries in sorted(self._streams.items())}


def expired_in(
    held: Iterable[tuple[int, str]] | None, key: str, now: int, instance: str, member: str | None = None
) -> list[LogEntry]:
    """The expire entries of the leases of concurrency state `held` expired by `now` (only `member`'s, if given)."""
    return [
        expire_entry(key, name, at, now, instance)
        for at, name in held or ()
        if at <= now and (member is None or name == member)
    ]
