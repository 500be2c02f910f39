"""Engine fixtures: a frozen clock, and the Redis and memory stores driven by it, each with its decisions tallied as
the platform tallies them (usage_book.py: stores keep counters only)."""

from __future__ import annotations

import pytest
import redis

from apps.engine import ManualClock, MemoryStore
from apps.engine.store.redis import RedisStore
from tests.engine.usage_book import Tallied

# 2024-01-15T00:00:00Z: a Monday, a UTC midnight and a multiple of every period the tests use.
START_MS = 1_705_276_800_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def redis_store(redis_client: redis.Redis, key_prefix: str, clock: ManualClock) -> RedisStore:
    return Tallied(RedisStore(redis_client, key_prefix, clock=clock))  # type: ignore[return-value]


@pytest.fixture
def memory_store(clock: ManualClock) -> MemoryStore:
    return Tallied(MemoryStore("mem", clock=clock))  # type: ignore[return-value]


@pytest.fixture(params=["redis", "memory"])
def store(request: pytest.FixtureRequest) -> RedisStore | MemoryStore:
    """Both stores: every behaviour test runs against Redis and against the in-process models."""
    return request.getfixturevalue(f"{request.param}_store")
