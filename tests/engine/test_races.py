"""Races: threads in several processes hammer one key with frozen time; exactly `limit` checks get in."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
import redis

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.store.redis import RedisStore
from tests.engine import invariants
from tests.engine.invariants import Admitted
from tests.engine.race_worker import hammer

NOW = 1_705_276_800_000 + 12_345
LIMIT = 40
PROCESSES, THREADS, ATTEMPTS = 2, 4, 12
KEY_BY = ("customer", "resource")
SPECS = [
    LimitSpec("hot", "fixed_window", LIMIT, period_s=60, key_by=KEY_BY),
    LimitSpec("hot", "calendar", LIMIT, calendar_period="day", key_by=KEY_BY),
    LimitSpec("hot", "sliding_window", LIMIT, period_s=60, key_by=KEY_BY),
    LimitSpec("hot", "sliding_log", LIMIT, period_s=60, key_by=KEY_BY),
    LimitSpec("hot", "token_bucket", LIMIT, period_s=60, key_by=KEY_BY),
    LimitSpec("hot", "leaky_bucket", 1, period_s=60, burst=LIMIT, key_by=KEY_BY),
    LimitSpec("hot", "concurrency", LIMIT, key_by=KEY_BY),
]


@pytest.fixture(scope="module")
def processes() -> Iterator[ProcessPoolExecutor]:
    with ProcessPoolExecutor(PROCESSES, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.mark.race
@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.algorithm)
def test_exactly_the_limit_is_admitted_under_contention(
    spec: LimitSpec, processes: ProcessPoolExecutor, redis_url: str, key_prefix: str
) -> None:
    jobs = [processes.submit(hammer, redis_url, key_prefix, spec, THREADS, ATTEMPTS, NOW) for _ in range(PROCESSES)]
    here = hammer(redis_url, key_prefix, spec, THREADS, ATTEMPTS, NOW)
    verdicts = here + [verdict for job in jobs for verdict in job.result(timeout=120)]
    assert len(verdicts) == (PROCESSES + 1) * THREADS * ATTEMPTS
    assert sum(verdicts) == LIMIT
    admitted = [Admitted(NOW, 1) for verdict in verdicts if verdict]
    if spec.algorithm == "concurrency":
        invariants.assert_concurrency([(NOW, NOW + 3_600_000)] * len(admitted), LIMIT)
    elif spec.algorithm == "calendar":
        invariants.assert_calendar_windows(admitted, "UTC", "day", LIMIT)
    elif spec.algorithm in ("token_bucket", "leaky_bucket"):
        invariants.assert_bucket(admitted, spec.quantity, spec.period_ms, spec.capacity)
    else:
        invariants.assert_fixed_windows(admitted, spec.period_ms, LIMIT)
        invariants.assert_sliding(admitted, spec.period_ms, LIMIT)


@pytest.mark.race
def test_rejected_checks_consume_nothing_under_contention(redis_url: str, key_prefix: str) -> None:
    wide = LimitSpec("wide", "fixed_window", 1000, period_s=60, key_by=KEY_BY)
    narrow = LimitSpec("narrow", "sliding_log", 30, period_s=60, key_by=KEY_BY)
    verdicts = hammer_pair(redis_url, key_prefix, [wide, narrow])
    assert sum(verdicts) == 30
    store = RedisStore(redis.Redis.from_url(redis_url), key_prefix, clock=ManualClock(NOW))
    check = CheckItem("hot-customer", "Op", resource="hot-resource", dry_run=True)
    assert [result.remaining for result in store.check(check, [wide, narrow]).limits] == [970, 0]


def hammer_pair(redis_url: str, prefix: str, limits: list[LimitSpec]) -> list[bool]:
    client = redis.Redis.from_url(redis_url, max_connections=THREADS + 1)
    store = RedisStore(client, prefix, clock=ManualClock(NOW))
    check = CheckItem("hot-customer", "Op", resource="hot-resource")
    verdicts: list[bool] = []
    with ThreadPoolExecutor(THREADS) as pool:
        for allowed in pool.map(lambda _: store.check(check, limits).allowed, range(THREADS * ATTEMPTS)):
            verdicts.append(allowed)
    client.close()
    return verdicts


@pytest.mark.race
def test_the_memory_store_admits_exactly_the_limit_across_threads() -> None:
    store = MemoryStore("mem", clock=ManualClock(NOW))
    limits = [LimitSpec("hot", "token_bucket", 25, period_s=60, key_by=KEY_BY)]
    check = CheckItem("hot-customer", "Op", resource="hot-resource")
    with ThreadPoolExecutor(8) as pool:
        verdicts = list(pool.map(lambda _: store.check(check, limits).allowed, range(200)))
    assert sum(verdicts) == 25
