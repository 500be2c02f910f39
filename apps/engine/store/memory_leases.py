"""MemoryStore's leases: a granted lease's record and booked time, renewing and releasing (store/sessions.py on
reference states), and the lease log entries, under the store's lock as the lease scripts do on Redis."""

from __future__ import annotations

import threading
from typing import Any

from apps.engine.clock import Clock
from apps.engine.decision_log import LogEntry
from apps.engine.keys import KeyLayout
from apps.engine.lease_terms import FOREVER
from apps.engine.reference.base import Params
from apps.engine.registry import ALGORITHMS, LEASE_SET_MODEL
from apps.engine.store import logbook, sessions
from apps.engine.store.decide import Outcome
from apps.engine.store.plan import ItemPlan, lease_ttl_ms


class MemoryLeases:
    """Mixed into MemoryStore, whose state these read and write under its lock."""

    _layout: KeyLayout
    _lock: threading.Lock
    _clock: Clock
    _instance: str
    _log: logbook.MemoryLog
    _usage: sessions.Usage
    _leases: dict[str, tuple[sessions.LeaseRecord, int]]

    def _read(self, key: str, now: int) -> Any:
        raise NotImplementedError

    def _store(self, key: str, state: Any, expires_at: int, now: int) -> None:
        raise NotImplementedError

    def _lease_granted(self, plan: ItemPlan, outcome: Outcome, now: int) -> None:
        """Under the lock, as the lease set's fragment does: the lease's record, its lifetime booked in usage (not an
        allocation's: it is held until released)."""
        if outcome.lease_id is not None:
            self._leases[plan.lease_record_key] = (sessions.record_of(plan, now), outcome.lease_expires)
            if outcome.lease_expires < FOREVER:
                sessions.book(self._usage, plan.usage_base, now, outcome.lease_expires, 1)

    def lease_renew(self, lease_id: str, ttl_s: int) -> int | None:
        """Extend a live lease (see Store.lease_renew; sessions.renew)."""
        ttl_ms = lease_ttl_ms(ttl_s)
        target = self._layout.lease_target(lease_id)
        if target is None:
            return None
        record_key = self._layout.lease_record_key(*target)
        with self._lock:
            now = self._clock.now_ms()
            record = self._lease_record(record_key, now)
            expired = self._expired_member(target, now)
            expires = sessions.renew(record, *self._access(now), self._usage, target, now, ttl_ms)
            if record is not None and expires is not None:
                self._leases[record_key] = (record, expires)
            if expires is not None:
                self._lease_logged("renew", target, now, expires, record)
            self._log.add(expired)
        return expires

    def lease_release(self, lease_id: str) -> None:
        """Give a lease back (see Store.lease_release; sessions.release)."""
        target = self._layout.lease_target(lease_id)
        if target is None:
            return
        record_key = self._layout.lease_record_key(*target)
        with self._lock:
            now = self._clock.now_ms()
            record = self._lease_record(record_key, now)
            expired = self._expired_member(target, now)
            live = any(member == target[1] for _, member in LEASE_SET_MODEL.live(self._read(target[0], now), now))
            sessions.release(record, *self._access(now), self._usage, target, now)
            self._leases.pop(record_key, None)
            if live:
                self._lease_logged("release", target, now, 0, record)
            self._log.add(expired)

    def _expired_member(self, target: tuple[str, str], now: int) -> list[LogEntry]:
        """The lease `target` names, if its set still holds it expired (lease_renew.lua, lease_release.lua)."""
        return logbook.expired_in(self._read(target[0], now), target[0], now, self._instance, target[1])

    def _lease_logged(
        self, kind: str, target: tuple[str, str], now: int, expires: int, record: sessions.LeaseRecord | None
    ) -> None:
        base = record.usage_base if record is not None else None
        self._log.add([logbook.lease_entry(self._layout.prefix, kind, *target, now, self._instance, expires, base)])

    def _lease_record(self, key: str, now: int) -> sessions.LeaseRecord | None:
        held = self._leases.get(key)
        return held[0] if held is not None and held[1] > now else None

    def _access(self, now: int) -> tuple[sessions.Read, sessions.Write]:
        """Read and write states at `now` (for sessions.renew and sessions.release)."""

        def write(key: str, state: Any, params: Params, algorithm: str) -> None:
            self._store(key, state, ALGORITHMS[algorithm].model.expires_at(state, params, now), now)

        return (lambda key: self._read(key, now)), write

    def _expired_dropped(self, plans: list[ItemPlan], outcomes: list[Outcome], now: int) -> list[LogEntry]:
        """The expired leases a granted lease's set drops as it is written (the lease set's fragment, on save)."""
        dropped: list[LogEntry] = []
        for plan, outcome in zip(plans, outcomes, strict=True):
            if outcome.lease_id is not None and not outcome.decision.replayed:
                key = plan.limits[0].keys[0]
                dropped += logbook.expired_in(self._read(key, now), key, now, self._instance)
        return dropped
