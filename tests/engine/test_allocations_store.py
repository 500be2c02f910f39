"""Allocations on both stores: held until released (a set holding one has no TTL), and resynchronized."""

from __future__ import annotations

import hashlib
import types
import uuid

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine import CheckItem, InvalidCheck, LimitSpec, ManualClock, MemoryStore, ResyncTooLarge, lease_ids
from apps.engine.keys import ALLOCATION_TTL_MS
from apps.engine.lease_terms import FOREVER, MAX_RESYNC_CHANGES
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

    raised = store.allocations_set(ITEM, STREAMS, 2)
    assert raised.before == 1
    assert len(raised.members) == 2
    assert raised.counter.startswith("c:{c=acct-1}:cc:")
    assert not store.check(ITEM, [STREAMS]).allowed
    assert store.allocations_set(ITEM, STREAMS, 0) == type(raised)(2, raised.counter, ())
    assert store.check(ITEM, [STREAMS]).allowed


def test_an_allocation_cannot_count_session_time(store: Store) -> None:
    with pytest.raises(InvalidCheck, match="session time"):
        store.lease_acquire(ITEM, STREAMS, None, [SESSIONS])


def test_a_set_holding_an_allocation_has_no_ttl_whatever_touches_it(redis_client: redis.Redis, key_prefix: str) -> None:
    """Redis's own TTLs, not the test clock: the set never lapses while it holds an allocation, whether touched by an
    acquire, a refused acquire, a renewal or a resync; a set of leases that expire keeps a TTL; records keep theirs."""
    store = RedisStore(redis_client, key_prefix)  # Redis server time
    _, lease_id, _ = store.lease_acquire(ITEM, STREAMS, None)
    assert lease_id is not None
    (key,) = redis_client.scan_iter(match=f"{key_prefix}:c:*")
    assert redis_client.pttl(key) == -1
    store.lease_acquire(ITEM, STREAMS, 30)
    assert redis_client.pttl(key) == -1
    assert not store.lease_acquire(ITEM, STREAMS, None)[0].allowed
    assert redis_client.pttl(key) == -1
    store.lease_renew(lease_id, 30)
    assert redis_client.pttl(key) == -1
    store.allocations_set(ITEM, STREAMS, 1)
    assert redis_client.pttl(key) == -1
    records = list(redis_client.scan_iter(match=f"{key_prefix}:l:*"))
    assert records
    assert all(0 < redis_client.pttl(record) <= ALLOCATION_TTL_MS + 60_000 for record in records)  # lib.lua's slack

    store.allocations_set(ITEM, STREAMS, 0)  # only the lease that expires is left: the set lapses with it
    assert 0 < redis_client.pttl(key) <= 30_000 + 60_000


SHARED = LimitSpec("pool", "concurrency", 50, key_by=())


def test_a_resync_moves_only_the_named_customers_allocations_on_a_shared_counter(store: Store) -> None:
    other, mine = CheckItem("acct-2", "CreateStream"), CheckItem("acct-1", "CreateStream")
    held_by_other = [store.lease_acquire(other, SHARED, None)[1] for _ in range(3)]
    store.lease_acquire(mine, SHARED, None)

    assert store.allocations_set(mine, SHARED, 5).before == 1
    assert store.allocations_set(mine, SHARED, 0).before == 5
    assert store.allocations_set(other, SHARED, 3).before == 3  # untouched by acct-1's resyncs
    assert store.check(mine, [SHARED]).limits[0].remaining == 50 - 3
    assert all(lease_id is not None for lease_id in held_by_other)


def test_a_resync_adding_or_dropping_too_many_at_once_writes_nothing(store: Store) -> None:
    big = LimitSpec("big", "concurrency", 10 * MAX_RESYNC_CHANGES, key_by=("customer",))
    store.allocations_set(ITEM, big, MAX_RESYNC_CHANGES)

    with pytest.raises(ResyncTooLarge):
        store.allocations_set(ITEM, big, 2 * MAX_RESYNC_CHANGES + 1)

    assert store.allocations_set(ITEM, big, MAX_RESYNC_CHANGES).before == MAX_RESYNC_CHANGES


OWNERS = ["acct-1", "acct-2", "acct-10"]  # b64 names that share leading characters too


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["resync", "acquire", "release"]), st.sampled_from(OWNERS), st.integers(0, 6)),
        max_size=25,
    )
)
def test_resyncs_acquires_and_releases_agree_between_lua_and_the_reference_model(
    redis_client: redis.Redis, key_prefix: str, monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, str, int]]
) -> None:
    # Both stores mint the same lease member at a step: a resync drops the greatest members, so with random ones
    # the two would drop different leases and a later release by position would compare different things.
    minted = {"step": 0}
    same_random = types.SimpleNamespace(token_hex=lambda n: hashlib.sha256(b"%d" % minted["step"]).hexdigest()[: 2 * n])
    monkeypatch.setattr(lease_ids, "secrets", same_random)
    clock = ManualClock(1_767_225_600_000)
    stores: list[Store] = [
        RedisStore(redis_client, f"{key_prefix}:{uuid.uuid4().hex}", clock=clock),
        MemoryStore("m", clock=clock),
    ]
    leases: list[list[str]] = [[], []]
    for step, (action, owner, number) in enumerate(steps):
        minted["step"] = step
        item = CheckItem(owner, "CreateStream")
        clock.advance(7)
        answers = []
        for store, held in zip(stores, leases, strict=True):
            if action == "resync":
                answers.append(store.allocations_set(item, SHARED, number).before)
            elif action == "acquire":
                decision, lease_id, _ = store.lease_acquire(item, SHARED, None if number % 2 else 60)
                held.extend([lease_id] if lease_id else [])
                answers.append(decision.allowed)
            else:
                answers.append(bool(held) and store.lease_release(held.pop(number % len(held))))
        assert answers[0] == answers[1]
        remaining = [store.check(item, [SHARED]).limits[0].remaining for store in stores]
        assert remaining[0] == remaining[1]
