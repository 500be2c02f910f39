"""The cases bench/engine/feature_cost.py measures: issue 25's base check and the base plus one feature at a time.

Every case is a function deciding one check (or one lease round) through the engine's store, as the API would; what it
costs Redis is whatever RedisStore.check (or ClusterStore.check) does for that shape, so the cases keep measuring the
right thing when the general script gives way to specialized ones.

The base: fixed window (a minute, per customer), token bucket (per second, per customer and resource) and calendar
(a day, per customer); not durable, no request id, not audited. All three are tagged by customer, so on a Redis Cluster
the base is one slot; the multi-slot case keys the calendar by client address instead (two slots).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.engine import CheckItem, LimitSpec
from apps.engine.hybrid_peers import RedisPeers
from apps.engine.store.redis import RedisStore
from apps.engine.types import SeedRequest

BIG = 10**12
CUSTOMERS = 64  # the checks go to these customers in turn (steady-state counters, as a busy service's are)
HYBRID_SYNC_MS = 100
HYBRID_WINDOW_MS = 60_000
HYBRID_INSTANCES = 2  # the API workers exchanging on the counter (one per core on the bench machine)


def empty_seeds(requests: Sequence[SeedRequest]) -> list[list[tuple[int, int]]]:
    """The platform's stores rebuild lost durable counters from their records; here there are none to read."""
    return [[] for _ in requests]


def base_limits(*, durable: bool = False, audit: bool = False, calendar_key: str = "customer") -> list[LimitSpec]:
    """Issue 25's 3-limit check (see the module docstring)."""
    return [
        LimitSpec("minute", "fixed_window", BIG, period_s=60, key_by=("customer",), durable=durable, audit=audit),
        LimitSpec("rate", "token_bucket", 10**9, period_s=1, key_by=("customer", "resource"), audit=audit),
        LimitSpec("day", "calendar", BIG, calendar_period="day", key_by=(calendar_key,), durable=durable, audit=audit),
    ]


CONCURRENCY = LimitSpec("open", "concurrency", 10**9, key_by=("customer",))
SHAPER = LimitSpec("shape", "leaky_bucket", 10**9, period_s=1, key_by=("customer",))


def item(n: int, **extra: Any) -> CheckItem:
    return CheckItem(f"acct-{n % CUSTOMERS}", "PutRecords", resource="shard-1", ip=f"10.0.{n % 251}.1", **extra)


@dataclass
class Case:
    """One row: `run(n)` decides the n-th check of the case. `counted`: how its Redis cost is counted, when it is
    not simply what each check costs."""

    name: str
    run: Callable[[int], object]
    baseline: str = "base"
    counted: str = ""
    cluster: bool = False
    calls: int = field(default=0, init=False)


def single_cases(store: RedisStore, client: Any, run_id: str, checks_per_exchange: Sequence[int]) -> list[Case]:
    """The cases on one Redis, base first."""
    base, durable, shaped = base_limits(), base_limits(durable=True), [*base_limits(), SHAPER]
    cases = [
        Case("base", lambda n: store.check(item(n), base)),
        Case("+ request id", lambda n: store.check(item(n, request_id=f"{run_id}-{n}"), base)),
        Case("+ durable (minute and day)", lambda n: store.check(item(n), durable)),
        Case("+ audit (decision log, 3 limits audited)", lambda n: store.check(item(n), base_limits(audit=True))),
        Case("+ lease limit (concurrency, a check looks)", lambda n: store.check(item(n), [*base, CONCURRENCY])),
        Case(
            "+ lease: acquire then release",
            lambda n: lease_round(store, n, base),
            counted="per lease: an acquire with the base limits, then its release (two requests)",
        ),
        Case("+ shaper (leaky bucket, max_wait 1 s)", lambda n: store.check(item(n, max_wait_ms=1000), shaped)),
        Case(
            "durable, new counters after an empty start",
            lambda n: store.check(dataclasses.replace(item(n), customer=f"new-{run_id}-{n}"), durable),
            baseline="+ durable (minute and day)",
            counted="a new customer each check: its counters' first check of the day after Redis started empty",
        ),
    ]
    for every in checks_per_exchange:
        cases.append(hybrid_case(store, client, run_id, every))
    return cases


def lease_round(store: RedisStore, n: int, others: list[LimitSpec]) -> None:
    _, lease_id, _ = store.lease_acquire(item(n), CONCURRENCY, 60, others)
    if lease_id is not None:
        store.lease_release(lease_id)


def hybrid_case(store: RedisStore, client: Any, run_id: str, every: int) -> Case:
    """The base with its fixed window counted hybrid (sync_ms 100): the worker decides that limit itself, so the
    check script gets the other two, and each counter's hybrid_sync.lua exchange is shared by the checks of one
    interval. `every` checks per exchange: 1 when a counter is asked at most once per sync_ms by a worker (bench/api's
    1,000 customers over 2 workers), sync_ms × the counter's rate per worker when it is hot."""
    peers = RedisPeers(client, retention_ms=3 * HYBRID_WINDOW_MS)
    exact = base_limits()[1:]
    start = int(time.time() * 1000) // HYBRID_WINDOW_MS * HYBRID_WINDOW_MS
    keys = [f"bench-feature-{run_id}:h:{{c=acct-{n}}}:minute" for n in range(CUSTOMERS)]
    for key in keys:
        for other in range(1, HYBRID_INSTANCES):
            peers.exchange(key, f"worker-{other}", start, start - HYBRID_WINDOW_MS, 1, 0)

    def run(n: int) -> None:
        store.check(item(n), exact)
        if n % every == 0:
            peers.exchange(keys[n % CUSTOMERS], "worker-0", start, start - HYBRID_WINDOW_MS, n // every + 1, 0)

    return Case(
        f"+ hybrid, {every} check(s) per exchange",
        run,
        counted=f"the fixed window hybrid (sync_ms {HYBRID_SYNC_MS}): the check script of the 2 exact limits, plus "
        f"one hybrid_sync.lua exchange ({HYBRID_INSTANCES} instances on the counter) every {every} check(s)",
    )


def cluster_cases(store: RedisStore) -> list[Case]:
    """The base on a Redis Cluster (one slot), and the base with its calendar keyed by client address (two slots)."""
    base, spread = base_limits(), base_limits(calendar_key="ip")
    name = "Cluster: base (one slot)"
    return [
        Case(name, lambda n: store.check(item(n), base), baseline="base", cluster=True),
        Case(
            "Cluster: multi-slot",
            lambda n: store.check(item(n), spread),
            baseline=name,
            cluster=True,
            counted="the calendar keyed by client address: two slots; Redis µs and calls summed over the nodes",
        ),
    ]
