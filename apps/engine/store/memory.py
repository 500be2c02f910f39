"""MemoryStore: the reference models behind one lock, for the embedded default (no Redis).

It follows the Store protocol and the same decision procedure as the Redis script (decide.py),
so the property tests use it as the oracle. State expires like Redis keys do: a state past its
models' expires_at equals "never used" and is dropped; a lease's session time in usage is kept for two days (the
caller tallies the decisions' usage: apps/engine/decision_usage.py). Given a seeder, a
durable counter missing when the store starts (a restarted process) is rebuilt from its records, as
RedisStore does after a data loss: the store's epoch is its creation; so is a lease set's allocations (asked once
per set and process: the seeder's side keeps them, store/seeds.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from apps.engine.clock import Clock, SystemClock
from apps.engine.decision_log import DEFAULT_MAX_PER_SLOT, LogEntry, default_instance
from apps.engine.durability import History, lookback_start, rebuild
from apps.engine.keys import IDEMPOTENCY_TTL_MS, MINUTE_MS, USAGE_TTL_MS, KeyLayout
from apps.engine.lease_terms import FOREVER
from apps.engine.limit_spec import LimitSpec
from apps.engine.name_budget import MemoryNameBudget
from apps.engine.registry import ALGORITHMS
from apps.engine.store import logbook, sessions
from apps.engine.store.base import UsageRow, usage_row
from apps.engine.store.decide import Effects, Outcome, Remembered, decide, request_slots
from apps.engine.store.memory_leases import MemoryLeases
from apps.engine.store.memory_tools import MemoryTools
from apps.engine.store.plan import ItemPlan, LimitPlan, check_mode, lease_ttl_ms, plan_item
from apps.engine.types import BatchMode, CheckItem, Decision, SeedRequest

SWEEP_EVERY = 1000
_MAX_SETS_ASKED = 100_000
Seeder = Callable[[Sequence[SeedRequest]], Sequence[History | Sequence[str]]]  # as RedisStore's


class MemoryStore(MemoryLeases, MemoryTools):
    """An in-process Store. clock: where time comes from (the system clock by default)."""

    def __init__(
        self,
        key_prefix: str = "quota",
        clock: Clock | None = None,
        seeder: Seeder | None = None,
        instance: str | None = None,
        log_max_per_slot: int = DEFAULT_MAX_PER_SLOT,
    ) -> None:
        """instance, log_max_per_slot: as RedisStore's (its decision log is kept in memory: log_streams)."""
        self._layout = KeyLayout(key_prefix)
        self._instance = instance or default_instance()
        self._log = logbook.MemoryLog(key_prefix, log_max_per_slot)
        self._clock: Clock = clock or SystemClock()
        self._seeder = seeder
        self._epoch = self._clock.now_ms()
        self._lock = threading.Lock()
        self._states: dict[str, tuple[Any, int]] = {}
        self._remembered: dict[str, tuple[Remembered, int]] = {}
        self._usage: sessions.Usage = {}
        self._leases: dict[str, tuple[sessions.LeaseRecord, int]] = {}  # record key -> (record, lease expiry)
        self._writes = 0
        self._names = MemoryNameBudget(clock=self._clock)
        self._sets_asked: set[str] = set()  # lease sets whose kept allocations were asked for (_rebuild_missing)

    def check(self, item: CheckItem, limits: Sequence[LimitSpec]) -> Decision:
        """Decide one check against `limits` (see Store.check)."""
        return self._run([plan_item(self._layout, item, limits, self._clock.now_ms())], False)[0].decision

    def check_batch(
        self, pairs: Sequence[tuple[CheckItem, Sequence[LimitSpec]]], mode: BatchMode = "independent"
    ) -> list[Decision]:
        """Decide checks in order, each on its own or all or none (see Store.check_batch)."""
        atomic = check_mode(mode)
        hint = self._clock.now_ms()
        plans = [plan_item(self._layout, item, limits, hint) for item, limits in pairs]
        return [outcome.decision for outcome in self._run(plans, atomic)]

    def lease_acquire(
        self, item: CheckItem, limit: LimitSpec, ttl_s: int | None, others: Sequence[LimitSpec] = ()
    ) -> tuple[Decision, str | None, int]:
        """Take a slot of `limit`, the lease set's (see Store.lease_acquire)."""
        plan = plan_item(self._layout, item, [limit, *others], self._clock.now_ms(), lease_ttl_ms(ttl_s))
        outcome = self._run([plan], False, self._lease_granted)[0]
        return outcome.decision, outcome.lease_id, outcome.lease_expires

    def log_streams(self) -> dict[str, list[LogEntry]]:
        """The decision log: each stream's entries, oldest first (decision_log.py; RedisStore writes them to Redis)."""
        with self._lock:
            return self._log.streams()

    def names_admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        """See Store.names_admit."""
        return self._names.admit(service, names, per_day)

    def usage_minutes(self) -> list[int]:
        """Minutes with usage waiting (see Store.usage_minutes)."""
        with self._lock:
            return sorted(self._usage)

    def usage_rows(self, minute: int) -> list[UsageRow]:
        """The usage counted during `minute` (see Store.usage_rows)."""
        with self._lock:
            counted = {base: dict(counters) for base, counters in self._usage.get(minute, {}).items()}
        return [usage_row(self._layout, base + str(minute), counters) for base, counters in sorted(counted.items())]

    def usage_discard(self, minute: int) -> None:
        """Forget the usage of `minute` (see Store.usage_discard)."""
        with self._lock:
            self._usage.pop(minute, None)

    def now_hint_ms(self) -> int:
        """Now, by this store's clock (see RedisStore.now_hint_ms)."""
        return self._clock.now_ms()

    def _run(
        self, plans: list[ItemPlan], atomic: bool, granted: Callable[[ItemPlan, Outcome, int], None] | None = None
    ) -> list[Outcome]:
        with self._lock:
            now = self._clock.now_ms()
            requests = request_slots(plans, lambda key: self._recall(key, now))  # may refuse: nothing written
            lent = self._rebuild_missing(plans, now) if self._seeder is not None else {}
            read = lambda key: self._read_lent(key, now, lent)  # noqa: E731
            outcomes, effects = decide(plans, atomic, now, read, requests, self._instance)
            self._log.add(self._expired_dropped(plans, outcomes, now))
            self._log.add(effects.log)
            self._commit(effects, now)
            if granted is not None:
                for plan, outcome in zip(plans, outcomes, strict=True):
                    if not outcome.decision.replayed:
                        granted(plan, outcome, now)
        return outcomes

    def _rebuild_missing(self, plans: list[ItemPlan], now: int) -> dict[str, Any]:
        """Rebuild the durable counters of `plans` that are missing and may have lost what they held.

        Those an item that is not a dry run names are stored; the others (only dry runs read them) are
        returned, to be read for this call only, as check.lua does."""
        kept = {limit.keys[0] for plan in plans if not plan.item.dry_run for limit in plan.limits}
        lent: dict[str, Any] = {}
        wanted = self._seeds_wanted(plans, now)
        if not wanted:
            return lent
        histories = self._seeder([request for _, request in wanted.values()]) if self._seeder else []
        for (key, (limit, _)), history in zip(wanted.items(), histories, strict=True):
            if limit.spec.entry.lease_set is not None:
                held = tuple(sorted((FOREVER, str(member)) for member in history))
                if held and key in kept:
                    self._store(key, held, FOREVER, now)
                continue
            params = limit.params(now)
            state = rebuild(limit.spec, params, cast(History, history), now)  # durable counters only here
            if state is None:
                continue
            expires = ALGORITHMS[limit.spec.algorithm].model.expires_at(state, params, now)
            if key in kept:
                self._store(key, state, expires, now)
            elif expires > now:
                lent[key] = state
        return lent

    def _seeds_wanted(self, plans: list[ItemPlan], now: int) -> dict[str, tuple[LimitPlan, SeedRequest]]:
        """By key, the seed requests of `plans`' missing durable counters whose look-back began before the epoch,
        and of their lease sets not asked for yet."""
        wanted: dict[str, tuple[LimitPlan, SeedRequest]] = {}
        for plan in plans:
            for limit in plan.limits:
                key = limit.keys[0]
                if limit.spec.entry.lease_set is not None and key not in wanted and key not in self._sets_asked:
                    # A lease set's allocations, kept by the seeder's side (PostgreSQL): asked once per set and
                    # process, as a Redis store asks once per set after a loss (store/seeds.py).
                    if len(self._sets_asked) >= _MAX_SETS_ASKED:
                        self._sets_asked.clear()  # asking again is only a query: what it restores is what is held
                    self._sets_asked.add(key)
                    if self._read(key, now) is None:
                        counter = self._layout.counter_id(key)
                        wanted[key] = (limit, SeedRequest(limit.spec, plan.item, counter, 0, now))
                    continue
                if not limit.counter or key in wanted or self._read(key, now) is not None:
                    continue
                since = lookback_start(limit.spec, limit.params(now), now)
                if since < self._epoch:
                    wanted[key] = (limit, SeedRequest(limit.spec, plan.item, limit.counter, since, now))
        return wanted

    def _read(self, key: str, now: int) -> Any:
        held = self._states.get(key)
        return held[0] if held is not None and held[1] > now else None

    def _read_lent(self, key: str, now: int, lent: dict[str, Any]) -> Any:
        return lent[key] if key in lent else self._read(key, now)

    def _recall(self, key: str, now: int) -> Remembered | None:
        held = self._remembered.get(key)
        return held[0] if held is not None and held[1] > now else None

    def _store(self, key: str, state: Any, expires_at: int, now: int) -> None:
        if expires_at > now:
            self._states[key] = (state, expires_at)
        else:
            self._states.pop(key, None)

    def _commit(self, effects: Effects, now: int) -> None:
        for key, (state, params, algorithm) in effects.states.items():
            self._store(key, state, ALGORITHMS[algorithm].model.expires_at(state, params, now), now)
        for key, remembered in effects.remembered.items():
            self._remembered[key] = (remembered, now + IDEMPOTENCY_TTL_MS)
        self._writes += 1
        if self._writes % SWEEP_EVERY == 0:
            self._sweep(now)

    def _sweep(self, now: int) -> None:
        self._states = {key: held for key, held in self._states.items() if held[1] > now}
        self._remembered = {key: held for key, held in self._remembered.items() if held[1] > now}
        self._leases = {key: held for key, held in self._leases.items() if held[1] > now}
        oldest = (now - USAGE_TTL_MS) // MINUTE_MS
        self._usage = {minute: rows for minute, rows in self._usage.items() if minute >= oldest}
