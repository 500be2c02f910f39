"""ProducerShaper: local token buckets that shape sends before they reach the platform (the Kinesis producer
library's per-shard rate limiting, for any multi-unit operation).

One bucket per key (customer, operation, resource, attributes, ip: what a platform counter is keyed by at most)
and per configured unit (e.g. records and bytes). Each bucket holds `limit × share` tokens and refills at that
many per `period_s`; a fresh bucket is full. `share` is 1.5 by default, as in the Kinesis producer library: one
producer can still saturate the limit, while the sends it makes (first submissions and resubmissions alike)
stay within 150 % of it, so a producer cannot flood the platform with requests bound to be refused. Lower it
(1.0, or below for several producers) to trade throughput for fewer refusals.

Tokens are taken per send, not per admission (the bucket shapes what is sent; the platform still decides), and a
refused item resent later takes them again, as in that library.

A bucket is kept as the time it will be full again (`full_at`: the generic cell rate form of a token bucket), so
a take is one comparison and one addition per unit and a full bucket is simply one that can be forgotten.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from quota_client.types import CheckItem

Key = tuple[str, str, str | None, tuple[tuple[str, str], ...], str | None]
REQUESTS = "requests"  # the platform counts one request per check unless the costs say otherwise
DEFAULT_SHARE = 1.5
DEFAULT_MAX_KEYS = 10_000
# A wait handed out and slept lands on the boundary it computed; float rounding must not turn that into a second,
# infinitesimal wait (a clock that cannot move by it would never get past it).
EPSILON_S = 1e-9


def key_of(item: CheckItem) -> Key:
    """The bucket key of an item: everything a platform counter may be keyed by."""
    attributes = tuple(sorted(item.attributes.items())) if item.attributes else ()
    return item.customer, item.operation, item.resource, attributes, item.ip


def cost_of(item: CheckItem, unit: str) -> int:
    """What a check costs in `unit`, as the platform counts it (requests: 1 unless the costs say otherwise)."""
    costs = item.costs or {}
    return int(costs.get(unit, 1 if unit == REQUESTS else 0))


@dataclass(frozen=True)
class UnitRate:
    """One unit's bucket shape: capacity in tokens and refill in tokens per second."""

    capacity: float
    per_s: float


class ProducerShaper:
    """Local token buckets per key and unit, shaping sends at `share` × the platform's limits.

        shaper = ProducerShaper({"records": 1000, "bytes": 1_048_576})  # per second, at 150 % by default
        client = QuotaClient(url, key, shaper=shaper)  # put_all then waits for the shaper before each round

    `limits`: unit → the platform's limit per `period_s` (the same for every key, as a shard limit is for every
    shard). Units not named here are not shaped. Thread-safe: share one among the producers of one process.
    `max_keys`: above that many buckets, the full ones (which are the same as no bucket) are forgotten.
    """

    def __init__(
        self,
        limits: Mapping[str, float],
        *,
        share: float = DEFAULT_SHARE,
        period_s: float = 1.0,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not limits:
            raise ValueError("limits names at least one unit (e.g. {'records': 1000, 'bytes': 1048576}).")
        bad = {unit: limit for unit, limit in limits.items() if not (isinstance(unit, str) and unit and limit > 0)}
        if bad:
            raise ValueError(f"each limit is a unit name and a number above zero, not {bad!r}.")
        if not share > 0:
            raise ValueError(f"share is a fraction of the limit above zero (1.5 = 150 %), not {share!r}.")
        if not period_s > 0:
            raise ValueError(f"period_s must be above zero, not {period_s!r}.")
        if max_keys < 1:
            raise ValueError(f"max_keys must be 1 or more, not {max_keys!r}.")
        self.share = float(share)
        self.period_s = float(period_s)
        self.limits = {unit: float(limit) for unit, limit in limits.items()}
        shaped = {unit: limit * self.share for unit, limit in self.limits.items()}
        self.rates = {unit: UnitRate(capacity, capacity / self.period_s) for unit, capacity in shaped.items()}
        self.max_keys = max_keys
        self.clock = clock
        self._full_at: dict[tuple[Key, str], float] = {}
        self._lock = threading.Lock()

    # -- what put_all needs ------------------------------------------------------------------------------------
    def fits_alone(self, need: Mapping[str, int]) -> bool:
        """Whether costs summed for one key fit an empty bucket's capacity in every shaped unit."""
        return all(need.get(unit, 0) <= rate.capacity for unit, rate in self.rates.items())

    def needs(self, items: Iterable[CheckItem]) -> dict[Key, dict[str, int]]:
        """The tokens a send of `items` takes: per key, per shaped unit. Raises ValueError for a negative cost."""
        totals: dict[Key, dict[str, int]] = {}
        for item in items:
            per_unit = totals.setdefault(key_of(item), dict.fromkeys(self.rates, 0))
            for unit in self.rates:
                cost = cost_of(item, unit)
                if cost < 0:
                    raise ValueError(f"costs are whole numbers of zero or more, not {unit}={cost!r}.")
                per_unit[unit] += cost
        return totals

    def take(self, items: Iterable[CheckItem]) -> float:
        """All or nothing: when every key's bucket holds what `items` need, take it and answer 0.0; otherwise
        take nothing and answer the seconds until it would (ask again then: another sender may come first).

        A key needing more than a bucket holds at all waits for its bucket to be full, then goes, and the debt
        delays what follows (never held back for good: the platform decides what can never fit)."""
        needs = self.needs(items)
        with self._lock:
            now = self.clock()
            wait = self._longest_wait(needs, now)
            if wait > 0:
                return wait
            for key, per in needs.items():
                for unit, need in per.items():
                    if need:
                        full_at = self._full_at.get((key, unit), now)
                        self._full_at[(key, unit)] = max(full_at, now) + need / self.rates[unit].per_s
            if len(self._full_at) > self.max_keys:
                self._forget_full(now)
            return 0.0

    def wait_s(self, items: Iterable[CheckItem]) -> float:
        """The seconds until `take(items)` would succeed (0.0: now), taking nothing."""
        needs = self.needs(items)
        with self._lock:
            return self._longest_wait(needs, self.clock())

    def tokens(self, item: CheckItem, unit: str) -> float:
        """The tokens the bucket of `item`'s key holds in `unit` now (below zero while in debt)."""
        rate = self.rates[unit]
        with self._lock:
            behind = self._full_at.get((key_of(item), unit), 0.0) - self.clock()
        return rate.capacity - max(behind, 0.0) * rate.per_s

    @property
    def bucket_count(self) -> int:
        """Buckets held (full ones may be forgotten). Not __len__: an empty shaper must not be falsy."""
        return len(self._full_at)

    # -- internals ---------------------------------------------------------------------------------------------
    def _longest_wait(self, needs: Mapping[Key, Mapping[str, int]], now: float) -> float:
        return max((self._wait(key, unit, need, now) for key, per in needs.items() for unit, need in per.items()),
                   default=0.0)  # fmt: skip

    def _wait(self, key: Key, unit: str, need: int, now: float) -> float:
        if not need:
            return 0.0
        rate = self.rates[unit]
        behind = self._full_at.get((key, unit), now) - now  # how long until the bucket is full again
        allowed_behind = (rate.capacity - min(need, rate.capacity)) / rate.per_s
        wait = behind - allowed_behind
        return wait if wait > EPSILON_S else 0.0

    def _forget_full(self, now: float) -> None:
        for bucket in [bucket for bucket, full_at in self._full_at.items() if full_at <= now]:
            del self._full_at[bucket]
