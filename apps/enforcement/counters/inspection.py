"""Looking at customers' counters without changing them: what each limit has used and has left.

Counters are read with dry-run checks through the engine store (they consume and count nothing), so the
admin sees what the next check would see, in one round trip for any number of customers. A limit counted
per customer alone has one counter per customer; concurrency limits counted per customer and something
more (a resource) keep one sorted set per resource, found by scanning the customer's keys. Other limits
keyed by more than the customer have no single per-customer number and say so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import redis

from apps.common.exceptions import ApplicationError
from apps.enforcement.counters.guarded_store import engine_store
from apps.enforcement.decisions.specs import limit_spec_of
from apps.engine import CheckItem, MemoryStore, Store
from apps.engine.keys import KeyLayout, enc
from apps.engine.registry import ALGORITHM_CODES
from apps.engine.store.redis import RedisStore
from apps.limits.algorithms import holds_leases
from apps.limits.models import Mode
from apps.limits.resolution import limit_effective
from apps.limits.snapshot import LimitConfig, Snapshot
from apps.limits.snapshot_holder import snapshot_holder

REQUESTS = "requests"
DRY_RUN_CHUNK = 500


class CountersUnavailable(ApplicationError):
    code = "counters_unavailable"
    status_code = 503


@dataclass(frozen=True, slots=True)
class LimitState:
    """One limit as it applies to one customer now. `used` and `remaining` are None when not readable
    (`note` says why in words); `capacity` is the most the counter holds (burst for buckets)."""

    limit: LimitConfig
    quantity: int | None
    capacity: int | None
    overridden: bool
    used: int | None = None
    remaining: int | None = None
    reset_ms: int | None = None
    note: str = ""

    @property
    def unlimited(self) -> bool:
        return self.quantity is None

    @property
    def fraction(self) -> float | None:
        """Used ÷ capacity, or None when unknown."""
        if self.used is None or not self.capacity:
            return None
        return self.used / self.capacity


def snapshot_fresh() -> Snapshot:
    """The config snapshot, checked against the database first: an operator who just saved expects to see it."""
    holder = snapshot_holder()
    holder.get()
    holder.refresh()
    return holder.get()


def customers_limit_states(
    customers: Sequence[str], *, snapshot: Snapshot | None = None, store: Store | None = None
) -> dict[str, list[LimitState]]:
    """Every limit that can apply to each customer (enforced or shadow; attribute matches aside), with
    what it has used. Raises CountersUnavailable when the counter store does not answer."""
    snapshot = snapshot or snapshot_fresh()
    store = store or engine_store()
    now_ms = time.time_ns() // 1_000_000
    states = {customer: _states_of(snapshot, customer, now_ms) for customer in customers}
    try:
        _read_counters(store, snapshot, states)
    except redis.RedisError as error:
        # Nothing to fall back on: the counters live only in Redis. The page says so and shows the rest.
        raise CountersUnavailable(f"Redis did not answer, so live counters cannot be shown ({error}).") from error
    return states


def customer_limit_states(customer: str, **kwargs: Any) -> list[LimitState]:
    return customers_limit_states([customer], **kwargs)[customer]


def _states_of(snapshot: Snapshot, customer: str, now_ms: int) -> list[LimitState]:
    config = snapshot.customers.get(customer)
    plan = config.plan if config else None
    overrides = snapshot.overrides_by_customer.get(customer, ())
    found = []
    for limits in snapshot.limits_by_operation.values():
        for limit in limits:
            if limit.plan not in (None, plan) or limit.mode == Mode.DISABLED:
                continue
            found.append(_state(limit, limit_effective(limit, overrides, now_ms=now_ms)))
    return sorted(found, key=lambda state: (state.limit.operation, state.limit.name))


def _state(limit: LimitConfig, effective: LimitConfig | None) -> LimitState:
    if effective is None:
        return LimitState(limit, None, None, True, note="unlimited for this customer (an override)")
    capacity = effective.burst if effective.burst is not None else effective.quantity
    state = LimitState(effective, effective.quantity, capacity, effective != limit)
    if "customer" not in limit.key_by:
        shared = "one counter for everyone" if not limit.key_by else f"counted per {'+'.join(limit.key_by)}"
        return replace(state, note=f"shared with other customers ({shared})")
    if limit.key_by != ("customer",) and not holds_leases(limit.algorithm):
        return replace(state, note=f"one counter per {'+'.join(limit.key_by)}: no single number for the customer")
    return state


def _readable(state: LimitState) -> bool:
    return not state.note and not state.unlimited


def _read_counters(store: Store, snapshot: Snapshot, states: dict[str, list[LimitState]]) -> None:
    timezones = {customer: getattr(snapshot.customers.get(customer), "timezone", "UTC") for customer in states}
    wanted = [
        (customer, index, state)
        for customer, found in states.items()
        for index, state in enumerate(found)
        if _readable(state) and state.limit.key_by == ("customer",)
    ]
    for start in range(0, len(wanted), DRY_RUN_CHUNK):
        chunk = wanted[start : start + DRY_RUN_CHUNK]
        pairs = [
            (_dry_run(customer, state.limit, timezones[customer]), [limit_spec_of(state.limit)])
            for customer, _, state in chunk
        ]
        for (customer, index, state), decision in zip(chunk, store.check_batch(pairs, "independent"), strict=True):
            result = decision.limits[0]
            used = max(0, (state.capacity or 0) - result.remaining)
            states[customer][index] = replace(state, used=used, remaining=result.remaining, reset_ms=result.reset_ms)
    for customer, found in states.items():
        for index, state in enumerate(found):
            if _readable(state) and state.limit.key_by != ("customer",):  # concurrency per customer+more
                held = leases_held(store, customer, state.limit)
                states[customer][index] = replace(state, used=held, remaining=max(0, (state.capacity or 0) - held))


def _dry_run(customer: str, limit: LimitConfig, timezone: str) -> CheckItem:
    # A zero cost in the limit's unit reads the counter; "requests" costs 1 by default, and a dry run counts nothing.
    costs = {limit.unit: 0} if limit.unit != REQUESTS else {}
    return CheckItem(customer=customer, operation=limit.operation, dry_run=True, costs=costs, timezone=timezone)


# --- Raw counter keys: scanning a customer's hash tag ------------------------------------------------
# Through the operator tools of the two stores the engine ships (RedisStore, MemoryStore).


def customer_key_head(prefix: str, customer: str) -> str:
    """The start of every counter key of `customer` under `prefix` (its hash tag; keys.py)."""
    return KeyLayout(prefix).customer_counters_head(customer)


def is_limit_key(rest: str, limit: LimitConfig) -> bool:
    """Whether `rest` (a counter key after the customer's head) is a key of `limit` (any period, any part)."""
    parts = rest.split(":")
    return (
        len(parts) >= 2 and parts[0].split(".")[0] == ALGORITHM_CODES[limit.algorithm] and parts[1] == enc(limit.name)
    )


def customer_counter_keys(store: Store, customer: str, limit: LimitConfig) -> list[str]:
    """Every counter key `limit` keeps for `customer` in `store` (all resources, all bucket periods)."""
    store = _inspectable(store)
    head = customer_key_head(store.key_prefix, customer)
    found = store.counter_keys(head + ALGORITHM_CODES[limit.algorithm])
    return [key for key in found if is_limit_key(key[len(head) :], limit)]


def counter_keys_delete(store: Store, keys: Sequence[str]) -> int:
    """Delete `keys` from `store`; the number that existed."""
    return _inspectable(store).counters_delete(keys)


def named_counters_delete(store: Store, counters: Sequence[str]) -> int:
    """Delete the counters named without the store prefix (as counter records and allocation sets name them)."""
    store = _inspectable(store)
    return store.counters_delete([f"{store.key_prefix}:{counter}" for counter in counters])


def leases_held(store: Store, customer: str, limit: LimitConfig) -> int:
    """Live leases of concurrency `limit` that `customer` holds, over all its counters (e.g. resources)."""
    return _inspectable(store).leases_live(customer_counter_keys(store, customer, limit))


def _inspectable(store: Store) -> RedisStore | MemoryStore:
    if not isinstance(store, RedisStore | MemoryStore):
        raise CountersUnavailable(f"Counters of a {type(store).__name__} cannot be listed or deleted.")
    return store
