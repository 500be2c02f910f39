"""Allocations on both stores: held until released, resynchronized, and every key still has a TTL."""

from __future__ import annotations

import pytest
import redis

from apps.engine import CheckItem, InvalidCheck, LimitSpec, ManualClock
from apps.engine.keys import ALLOCATION_TTL_MS
from apps.engine.reference.concurrency import FOREVER
from apps.engine.store.base import Store
from apps.engine.store.redis import RedisStore

STREAMS = LimitSpec("streams", "concurrency", 2, key_by=("customer",))
SESSIONS = LimitSpec("time", "session_time", 60, period_s=3600, key_by=("customer",))
ITEM = CheckItem("acct-1", "CreateStream")


def test_an_allocation_is_held_until_released(store: Store, clock: ManualClock) -> None:
    decision, lease_id, expires = store.lease_acquire(ITEM, STREAMS, None)
    assert (decision.allowed, expires) == (True, FOREVER)
    assert lease_id is not None
    store.lease_acquire(ITEM, STREAMS, None)
    clock.advance(86_400_000)

    refused = store.lease_acquire(ITEM, STREAMS, None)[0]
    assert (refused.allowed, refused.retry_after_ms) == (False, None)
    assert store.lease_renew(lease_id, 30) == FOREVER
    store.lease_release(lease_id)
    assert store.lease_acquire(ITEM, STREAMS, None)[0].allowed


def test_resync_answers_the_count_before_and_sets_it(store: Store) -> None:
    store.lease_acquire(ITEM, STREAMS, None)

    assert store.allocations_set(ITEM, STREAMS, 2) == 1
    assert not store.check(ITEM, [STREAMS]).allowed
    assert store.allocations_set(ITEM, STREAMS, 0) == 2
    assert store.check(ITEM, [STREAMS]).allowed


def test_an_allocation_cannot_count_session_time(store: Store) -> None:
    with pytest.raises(InvalidCheck, match="session time"):
        store.lease_acquire(ITEM, STREAMS, None, [SESSIONS])


def test_allocation_keys_live_a_week_after_their_last_change(redis_client: redis.Redis, key_prefix: str) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(1_767_225_600_000))
    _, lease_id, _ = store.lease_acquire(ITEM, STREAMS, None)
    store.lease_acquire(ITEM, STREAMS, 30)
    assert lease_id is not None
    store.lease_renew(lease_id, 30)
    store.allocations_set(ITEM, STREAMS, 2)

    keys = list(redis_client.scan_iter(match=f"{key_prefix}*"))
    ttls = [redis_client.pttl(key) for key in keys]
    assert len(keys) >= 3  # the set, the allocation's record, the lease's record (and usage)
    assert all(0 < ttl <= ALLOCATION_TTL_MS + 1_000 for ttl in ttls)
