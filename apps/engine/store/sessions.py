"""Leases as sessions: their records, their renewal and release, and session time in usage.

A lease granted by check.lua (or decide.py) gets a *record* (keys.py: `<prefix>:l:{<tag>}:<member>`, TTL
until the lease expires): when it started, the usage of its customer x operation, and the session_time
limits it counts against (key, seconds, period, shadow) as they were when it was acquired. Renewing and
releasing read it, so they need nothing but the lease id, and stay one round trip (lua/lease_renew.lua,
lua/lease_release.lua).

Session time in usage ("session_ms" per customer x operation x UTC minute): a lease's lifetime is booked when
it is granted, split over the minutes it spans; a renewal books its extension (or gives back a shortening),
a release gives back the part after now. So an expired lease (a crashed holder) is counted up to its expiry
without anyone seeing it expire, and only minutes from now on ever move: a flushed minute stays exact.

Every lease event goes to the decision log (decision_log.py) in the same call: "acquire" (check.lua), "renew",
"release", and "expire" for an expired lease a script finds and removes (a renewal or release that comes too
late, or the lease set's fragment pruning the set on save). Renewals and releases name the customer (from the member),
the operation (from the record's usage base; "" for a lease without a record) and the limit (from the key).

RedisLeases runs the two scripts; the functions below are the same steps on reference states, for MemoryStore.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from apps.engine.deadline import DeadlineScript
from apps.engine.decision_log import LogSettings, log_key_of
from apps.engine.keys import MINUTE_MS, KeyLayout, lease_owner_part
from apps.engine.lease_terms import FOREVER, MAX_RESYNC_CHANGES
from apps.engine.reference.base import Params
from apps.engine.registry import LEASE_CLOCKS, LEASE_SET, LEASE_SET_MODEL
from apps.engine.store.plan import ItemPlan
from apps.engine.types import Resynced, ResyncTooLarge, SessionTimeSpent

SESSION_MS = "session_ms"  # the usage field
RENEWED, UNKNOWN, SPENT = 1, 0, 2  # the first number of lease_renew.lua's answer
NEEDS_KEPT = -2  # allocations.lua's answer when the set must be rebuilt from the kept allocations first


def lua(*names: str) -> str:
    """The text of apps/engine/lua/<names>, joined."""
    folder = resources.files("apps.engine") / "lua"
    return "\n".join((folder / name).read_text(encoding="utf-8") for name in names)


# The fragments the lease scripts call: the lease set's, then those of the algorithms counting lease time.
_LEASE_FRAGMENTS = (*LEASE_SET.fragments, *(name for entry, _ in LEASE_CLOCKS for name in entry.fragments))
RENEW_SCRIPT = lua("lib.lua", *_LEASE_FRAGMENTS, "lease_renew.lua")
RELEASE_SCRIPT = lua("lib.lua", *_LEASE_FRAGMENTS, "lease_release.lua")
ALLOCATIONS_SCRIPT = lua("lib.lua", *LEASE_SET.fragments, "allocations.lua")
# The Python twins of those fragments: the lease set's model, and the one counting lease time (a lease record
# lists its session limits without their algorithm: there is one).
_SET = LEASE_SET_MODEL
((_CLOCK_ENTRY, _CLOCK),) = LEASE_CLOCKS
_CLOCK_NAME = _CLOCK_ENTRY.name
_NO_PARAMS = Params(0, 0, 0)


class RedisLeases:
    """Renewing and releasing leases on Redis, one EVALSHA each. now: None = Redis server time. log: where the
    renewals, releases and expiries found are logged (the stream in the lease set's slot; None = not logged)."""

    def __init__(
        self, client: redis.Redis, layout: KeyLayout, now: Callable[[], int | str], log: LogSettings | None = None
    ) -> None:
        self._layout = layout
        self._now = now
        self._log = log
        self._renew = DeadlineScript(client, RENEW_SCRIPT)
        self._release = DeadlineScript(client, RELEASE_SCRIPT)
        self._allocations = DeadlineScript(client, ALLOCATIONS_SCRIPT)

    def renew(self, lease_id: str, ttl_ms: int) -> int | None:
        """See Store.lease_renew; raises SessionTimeSpent when a session_time limit of the lease is spent."""
        target = self._layout.lease_target(lease_id)
        if target is None:
            return None
        key, member = target
        keys, logging = self._keys(key, member)
        kind, value = (int(n) for n in self._renew(keys=keys, args=[member, ttl_ms, self._now(), *logging]))
        if kind == SPENT:
            raise SessionTimeSpent(None if value < 0 else value)
        return value if kind == RENEWED else None

    def release(self, lease_id: str) -> None:
        """See Store.lease_release."""
        target = self._layout.lease_target(lease_id)
        if target is not None:
            key, member = target
            keys, logging = self._keys(key, member)
            self._release(keys=keys, args=[member, self._now(), *logging])

    def allocations_set(
        self, key: str, customer: str, held: int, kept: Callable[[], str] | None = None, warm_key: str = ""
    ) -> Resynced:
        """See Store.allocations_set, on lease set `key` (allocations.lua). kept: the set's seed (store/seeds.py),
        asked only when the set is missing while the epoch's warm mark `warm_key` is not there; None: never asked."""
        owner = lease_owner_part(customer)
        keys, seed = ([key, warm_key], "?") if kept is not None else ([key], "")
        answer = self._allocations(keys=keys, args=[self._now(), held, owner, MAX_RESYNC_CHANGES, seed])
        if int(answer[0]) == NEEDS_KEPT and kept is not None:
            answer = self._allocations(keys=keys, args=[self._now(), held, owner, MAX_RESYNC_CHANGES, kept()])
        before = int(answer[0])
        if before < 0:
            raise ResyncTooLarge
        members = tuple(m.decode() if isinstance(m, bytes) else str(m) for m in answer[1:])
        return Resynced(before, self._layout.counter_id(key), members)

    def _keys(self, key: str, member: str) -> tuple[list[str], list[str | int]]:
        """KEYS of the scripts (set, record, log stream when logging) and ARGV's logging tail (instance, cap)."""
        keys = [key, self._layout.lease_record_key(key, member)]
        if self._log is None:
            return keys, []
        return [*keys, log_key_of(self._log.prefix, key)], [self._log.instance, self._log.max_per_slot]


# --- The same on reference states (MemoryStore) ---------------------------------------------------------

# minute -> usage base -> field -> amount, as MemoryStore keeps usage.
Usage = dict[int, dict[str, dict[str, int]]]
# Read a state by key (None when missing) and write one (state, params, algorithm) back.
Read = Callable[[str], Any]
Write = Callable[[str, Any, Params, str], None]


@dataclass(frozen=True, slots=True)
class SessionLimit:
    key: str
    params: Params
    shadow: bool


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """What a lease's record holds (see the module docstring)."""

    start: int
    usage_base: str
    limits: tuple[SessionLimit, ...]


def record_of(plan: ItemPlan, now: int) -> LeaseRecord:
    """The record of the lease `plan` was granted at `now`."""
    limits = tuple(SessionLimit(limit.keys[0], limit.params(now), limit.spec.shadow) for limit in plan.session_limits())
    return LeaseRecord(now, plan.usage_base, limits)


def book(usage: Usage, base: str, start: int, end: int, sign: int) -> None:
    """Add sign x (the part of [start, end) in each UTC minute) to the minutes' session_ms at `base`."""
    minute = start // MINUTE_MS
    while minute * MINUTE_MS < end:
        part = min(end, (minute + 1) * MINUTE_MS) - max(start, minute * MINUTE_MS)
        if part > 0:
            counters = usage.setdefault(minute, {}).setdefault(base, {})
            counters[SESSION_MS] = counters.get(SESSION_MS, 0) + sign * part
        minute += 1


def renew(
    record: LeaseRecord | None, read: Read, write: Write, usage: Usage, target: tuple[str, str], now: int, ttl_ms: int
) -> int | None:
    """lease_renew.lua on reference states: the new expiry, None when the lease is gone; raises SessionTimeSpent."""
    key, member = target
    held = _SET.live(read(key), now)
    old = next((expires for expires, name in held if name == member), None)
    if old is None or old >= FOREVER:  # gone, or an allocation (kept as it is, its storage too)
        write(key, held, _NO_PARAMS, LEASE_SET.name)
        return old
    limits = record.limits if record is not None else ()
    refusals = [_CLOCK.evaluate(read(limit.key), limit.params, now, 1) for limit in limits if not limit.shadow]
    waits = [wait for ok, wait in refusals if not ok]
    if waits:
        raise SessionTimeSpent(None if None in waits else max(wait for wait in waits if wait is not None))
    state, _ = _SET.renew(held, now, member, ttl_ms)
    write(key, state, _NO_PARAMS, LEASE_SET.name)
    expires = now + ttl_ms
    for limit in limits:
        write(limit.key, _CLOCK.renew(read(limit.key), limit.params, now, member, expires), limit.params, _CLOCK_NAME)
    if record is not None:
        book(usage, record.usage_base, *((old, expires, 1) if expires > old else (expires, old, -1)))
    return expires


def release(
    record: LeaseRecord | None, read: Read, write: Write, usage: Usage, target: tuple[str, str], now: int
) -> None:
    """lease_release.lua on reference states."""
    key, member = target
    old = next((expires for expires, name in _SET.live(read(key), now) if name == member), None)
    write(key, _SET.release(read(key), now, member), _NO_PARAMS, LEASE_SET.name)
    if old is None or record is None:
        return
    for limit in record.limits:
        write(limit.key, _CLOCK.release(read(limit.key), limit.params, now, member), limit.params, _CLOCK_NAME)
    if old < FOREVER:  # an allocation's time is not booked
        book(usage, record.usage_base, now, old, -1)
