"""hybrid_sync.lua (apps/engine/hybrid.py) answers every exchange exactly as its reference model
quota_client.hybrid.MemoryPeers does, on one Redis and on a Redis Cluster, and drives HybridCounter alike."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quota_client.hybrid import HybridConfig, HybridCounter, MemoryPeers, fixed_windows

from apps.engine import ManualClock
from apps.engine.hybrid import RedisPeers, hybrid_key

WINDOW = 10_000
RETENTION = 3 * WINDOW

exchanges = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),  # instance
        st.integers(0, 3),  # window index (instances may lag a window behind)
        st.integers(0, 50),  # count in the window
        st.integers(0, 50),  # count in the previous window
        st.sampled_from([0, 1, 500, WINDOW, RETENTION + 1]),  # ms before the exchange
        st.booleans(),  # the store restarts first (1 in 2 drawn, rarely kept by the shrinker)
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=exchanges)
def test_the_script_answers_like_its_reference_model(
    steps: list[Any], redis_client: redis.Redis, key_prefix: str
) -> None:
    clock = ManualClock(1_700_000_000_000)
    peers = RedisPeers(redis_client, retention_ms=RETENTION, clock=clock)
    model = MemoryPeers(RETENTION, clock.now_ms)
    key = f"{key_prefix}:h:{{c=acct}}:{uuid.uuid4().hex}"  # a counter of this example's own
    for instance, window, count, count_prev, wait, restart in steps:
        clock.advance(wait)
        if restart and wait == RETENTION + 1:
            redis_client.delete(key)
            model.restart()
        start = (clock.now_ms() // WINDOW - window) * WINDOW
        got = peers.exchange(key, instance, start, start - WINDOW, count, count_prev)
        assert got == model.exchange(key, instance, start, start - WINDOW, count, count_prev)


def test_two_counters_share_one_limit_through_redis(redis_client: redis.Redis, key_prefix: str) -> None:
    clock = ManualClock(1_700_000_000_000)
    peers = RedisPeers(redis_client, retention_ms=RETENTION, clock=clock)
    key = hybrid_key(f"{key_prefix}:c:{{c=acct}}:fw:hot:c=acct", key_prefix)
    config = HybridConfig(limit=100, sync_ms=WINDOW // 10)
    a, b = (HybridCounter(config, fixed_windows(WINDOW), peers.exchange_for(key, name), clock.now_ms) for name in "ab")
    admitted = 0
    for _ in range(WINDOW // 10):
        clock.advance(10)
        admitted += a.try_acquire() + b.try_acquire()
        a.sync_if_due()
        b.sync_if_due()
    assert 100 <= admitted <= 100 + 2 * 2 * (WINDOW // 10) // 10  # limit + what the other admits in 2 intervals
    assert peers.calls <= 2 * 11 + 2  # one exchange per instance per interval (and the first)
    assert key.startswith(f"{key_prefix}:h:{{c=acct}}:")


@pytest.mark.slow
def test_the_exchange_runs_on_a_redis_cluster(cluster_client: Any, cluster_prefix: str) -> None:
    clock = ManualClock(1_700_000_000_000)
    peers = RedisPeers(cluster_client, retention_ms=RETENTION, clock=clock)
    key = hybrid_key(f"{cluster_prefix}:c:{{i=203.0.113.7}}:fw:hot:i=203.0.113.7", cluster_prefix)
    peers.exchange(key, "a", 0, -WINDOW, 5, 0)
    answer = peers.exchange(key, "b", 0, -WINDOW, 7, 0)
    assert (answer.others, answer.instances, answer.fresh) == (5, 2, True)  # b's first exchange
