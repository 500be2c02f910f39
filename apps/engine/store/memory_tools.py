"""MemoryStore's operator tools (admin usage page, unblock, allocations), as on RedisStore: never on the hot path."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from apps.engine.clock import Clock
from apps.engine.keys import KeyLayout, lease_owner_part
from apps.engine.lease_terms import FOREVER, MAX_RESYNC_CHANGES
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params
from apps.engine.registry import LEASE_SET_MODEL as LEASES
from apps.engine.types import CheckItem, Resynced, ResyncTooLarge, SeedRequest


class MemoryTools:
    """Mixed into MemoryStore, whose state these read and write under its lock."""

    _layout: KeyLayout
    _lock: threading.Lock
    _states: dict[str, tuple[Any, int]]
    _clock: Clock
    _epoch: int
    _seeder: Callable[[Sequence[SeedRequest]], Sequence[Any]] | None
    _sets_asked: set[str]

    def _read(self, key: str, now: int) -> Any:
        raise NotImplementedError

    def _store(self, key: str, state: Any, expires_at: int, now: int) -> None:
        raise NotImplementedError

    @property
    def key_prefix(self) -> str:
        return self._layout.prefix

    def counter_keys(self, head: str) -> list[str]:
        """The live keys that start with `head`, sorted."""
        with self._lock:
            return sorted(key for key in self._states if key.startswith(head))

    def counters_delete(self, keys: Sequence[str]) -> int:
        """Delete `keys`; how many existed."""
        with self._lock:
            return sum(self._states.pop(key, None) is not None for key in keys)

    def counters_forget(self, counters: Sequence[str]) -> None:
        """Delete `counters` and start a new epoch (see RedisStore.counters_forget)."""
        with self._lock:
            for counter in counters:
                for key in self._layout.keys_of_counter(counter):
                    self._states.pop(key, None)
            self._epoch = self._clock.now_ms()

    def leases_live(self, keys: Sequence[str]) -> int:
        """Unexpired leases in the lease set counters `keys`."""
        with self._lock:
            now = self._clock.now_ms()
            return sum(len(LEASES.live(self._read(key, now), now)) for key in keys)

    def allocations_set(self, item: CheckItem, limit: LimitSpec, held: int) -> Resynced:
        """See Store.allocations_set (the lease set model's resync)."""
        key = self._layout.counter_keys(limit, item)[0]
        with self._lock:
            now = self._clock.now_ms()
            state, owner = self._read(key, now), lease_owner_part(item.customer)
            if state is None and self._seeder is not None and key not in self._sets_asked:
                # A restarted process: the set's kept allocations first (as MemoryStore._rebuild_missing does).
                self._sets_asked.add(key)
                asked = SeedRequest(limit, item, self._layout.counter_id(key), 0, now)
                (members,) = self._seeder([asked])
                state = tuple(sorted((FOREVER, str(member)) for member in members)) or None
            if LEASES.resync_changes(state, now, held, owner) > MAX_RESYNC_CHANGES:
                raise ResyncTooLarge
            synced = LEASES.resync(state, now, held, owner)
            self._store(key, synced, LEASES.expires_at(synced, Params(0, 0, 0), now), now)
            before = len(LEASES.owned(LEASES.allocations(state, now), owner))
            now_held = tuple(LEASES.owned(LEASES.allocations(synced, now), owner))
            return Resynced(before, self._layout.counter_id(key), now_held)
