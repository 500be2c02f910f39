"""hybrid_sync.lua (apps/engine/hybrid_peers.py) answers every exchange exactly as its reference model
quota_client.hybrid.MemoryPeers does, on one Redis and on a Redis Cluster, and drives HybridCounter alike."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quota_client.hybrid import MAX_INSTANCES, SATURATED, HybridConfig, HybridCounter, MemoryPeers, fixed_windows

from apps.engine import ManualClock
from apps.engine.hybrid_peers import RedisPeers, hybrid_key

WINDOW = 10_000
RETENTION = 3 * WINDOW

CAP = 50  # the limit's quantity: a count above it is taken as it
MOST = 3  # instances kept per counter in these examples (MAX_INSTANCES in production)

exchanges = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d", "e"]),  # instance (five, so the bound of three drops some)
        st.integers(0, 3),  # window index (instances may lag a window behind)
        st.integers(0, CAP + 10),  # count in the window
        st.integers(0, CAP + 10),  # count in the previous window
        st.sampled_from([0, 1, 500, WINDOW, RETENTION + 1]),  # ms before the exchange
        st.booleans(),  # the store restarts first (1 in 2 drawn, rarely kept by the shrinker)
    ),
    min_size=1,
    max_size=30,
)


def recorded(start: int, prev_start: int) -> tuple[int, int]:
    """What the records of a durable counter hold of two windows: some nothing, some more than the cap."""
    return (start // WINDOW) % 4 * 20, (prev_start // WINDOW) % 3 * 9


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=exchanges, durable=st.booleans())
def test_the_script_answers_like_its_reference_model(
    steps: list[Any], durable: bool, redis_client: redis.Redis, key_prefix: str
) -> None:
    clock = ManualClock(1_700_000_000_000)
    example = uuid.uuid4().hex  # a counter and an epoch of this example's own
    key, epoch = f"{key_prefix}:h:{{c=acct}}:{example}", f"{key_prefix}:epoch:{example}"
    peers = RedisPeers(
        redis_client, retention_ms=RETENTION, clock=clock, max_instances=MOST, epoch_key_of=lambda _: epoch
    )
    model = MemoryPeers(RETENTION, clock.now_ms, max_instances=MOST)
    seeds = recorded if durable else None
    for instance, window, count, count_prev, wait, restart in steps:
        clock.advance(wait)
        if restart and wait == RETENTION + 1:
            redis_client.delete(key, epoch)
            model.restart()
        start = (clock.now_ms() // WINDOW - window) * WINDOW
        got = peers.exchange(key, instance, start, start - WINDOW, count, count_prev, cap=CAP, recorded=seeds)
        want = model.exchange(key, instance, start, start - WINDOW, count, count_prev, cap=CAP, recorded=seeds)
        assert got == want
        assert sum(1 for name in redis_client.hkeys(key) if not name.startswith(b"~")) <= MOST


def test_sums_saturate_and_the_instances_stay_bounded_whatever_is_reported(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """1,100 instances each reporting 2**53 - 1 used to push the sum past 2**63, which Redis wrapped to -2**63."""
    clock = ManualClock(1_700_000_000_000)
    peers = RedisPeers(redis_client, retention_ms=RETENTION, clock=clock)
    key = f"{key_prefix}:h:{{c=acct}}:wrap"
    start = clock.now_ms() - clock.now_ms() % WINDOW
    for n in range(1100):
        peers.exchange(key, f"i{n}", start, start - WINDOW, SATURATED, SATURATED)

    answer = peers.exchange(key, "last", start, start - WINDOW, 0, 0)

    assert (answer.others, answer.others_prev, answer.instances) == (SATURATED, SATURATED, MAX_INSTANCES)
    assert sum(1 for name in redis_client.hkeys(key) if not name.startswith(b"~")) == MAX_INSTANCES


def test_a_lost_durable_counter_starts_from_its_records(redis_client: redis.Redis, key_prefix: str) -> None:
    clock = ManualClock(1_700_000_000_000)
    epoch = f"{key_prefix}:epoch"
    peers = RedisPeers(redis_client, retention_ms=RETENTION, clock=clock, epoch_key_of=lambda _: epoch)
    key = f"{key_prefix}:h:{{c=acct}}:daily"
    start = clock.now_ms() - clock.now_ms() % WINDOW
    asked: list[tuple[int, int]] = []

    def records(window: int, prev: int) -> tuple[int, int]:
        asked.append((window, prev))
        return 30, 12

    redis_client.set(epoch, start - 5 * WINDOW)  # the store's data starts long before: a new counter, no query
    assert peers.exchange(key, "new", start, start - WINDOW, 0, 0, recorded=records).others == 0
    assert asked == []
    redis_client.delete(key, epoch)  # Redis restarted empty
    clock.advance(10)

    first = peers.exchange(key, "a", start, start - WINDOW, 0, 0, recorded=records)
    peers.exchange(key, "a", start, start - WINDOW, 6, 0, recorded=records)  # a admits 6 after the restart
    second = peers.exchange(key, "b", start, start - WINDOW, 0, 0, recorded=records)

    assert asked == [(start, start - WINDOW)]  # once: the counter is no longer empty after it
    assert (first.others, first.others_prev) == (30, 12)
    assert second.others == 30 + 6  # the records, and what a admitted after it saw them
    assert peers.calls == 4


@pytest.mark.parametrize("instance", ["~f:1", "~"])
def test_names_of_the_stores_own_fields_are_refused(redis_client: redis.Redis, instance: str) -> None:
    with pytest.raises(ValueError, match="store's own"):
        RedisPeers(redis_client, retention_ms=RETENTION).exchange("k", instance, 0, -WINDOW, 1, 0)


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
