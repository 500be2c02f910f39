"""Request ids: the same id and the same request replay the first decision; the same id with other parameters
is refused (IdempotencyKeyReused) before anything moves, against Redis and the in-process store alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import redis

from apps.engine import IdempotencyKeyReused, KeyLayout, LimitSpec, ManualClock
from apps.engine.store.base import Store
from apps.engine.store.redis import RedisStore
from tests.engine.test_checks import fixed, item, remaining

LIMITS = [fixed("minute", 5, unit="requests"), fixed("records", 100, unit="records")]
SLOTS = LimitSpec("slots", "concurrency", 2, key_by=("customer",))
FIRST = item(request_id="req-1", resource="stream-1", attributes={"Kind": "x", "Tier": "1"}, costs={"records": 10})


def state(store: Store) -> tuple[list[int], list[Any]]:
    """What a refused call must leave as it was: the counters' remaining and the usage counted."""
    return remaining(store, LIMITS, resource="stream-1"), [store.usage_rows(m) for m in store.usage_minutes()]


@pytest.mark.parametrize(
    "changed",
    [
        {"operation": "GetRecords"},
        {"resource": "stream-2"},
        {"attributes": {"Kind": "y", "Tier": "1"}},
        {"attributes": {"Kind": "x"}},
        {"costs": {"records": 11}},
        {"costs": {"records": 10, "requests": 2}},
        {"dry_run": True},
    ],
    ids=lambda changed: next(iter(changed)) + "=" + str(next(iter(changed.values()))),
)
def test_the_same_id_with_other_parameters_is_refused_and_consumes_nothing(
    store: Store, clock: ManualClock, changed: dict[str, Any]
) -> None:
    first = store.check(FIRST, LIMITS)
    clock.advance(1_000)
    before = state(store)

    with pytest.raises(IdempotencyKeyReused) as refused:
        store.check(replace(FIRST, **changed), LIMITS)

    assert refused.value.indexes == (0,)
    assert state(store) == before
    assert store.check(FIRST, LIMITS) == replace(first, replayed=True)  # the first decision still stands


def test_the_same_request_written_otherwise_is_the_same_request(store: Store) -> None:
    store.check(FIRST, LIMITS)
    # attribute order, an explicit requests cost of 1 and a zero cost are what the first request said
    same = replace(FIRST, attributes={"Tier": "1", "Kind": "x"}, costs={"requests": 1, "records": 10, "bytes": 0})
    assert store.check(same, LIMITS).replayed
    assert store.check(replace(FIRST, ip="198.51.100.1"), LIMITS).replayed  # a retry may come another way


def test_a_batch_with_a_reused_id_is_refused_whole_naming_its_items(store: Store) -> None:
    store.check(FIRST, LIMITS)
    before = state(store)
    batch = [
        item(request_id="new-1", resource="stream-1"),
        FIRST,  # a replay: fine on its own
        item(resource="stream-1", costs={"records": 50}),
        replace(FIRST, costs={"records": 99}),  # reused
        item(request_id="new-2", resource="stream-1"),
        replace(item(request_id="new-2", resource="stream-1"), costs={"records": 1}),  # repeats item 4 otherwise
    ]
    for mode in ("independent", "atomic"):
        with pytest.raises(IdempotencyKeyReused) as refused:
            store.check_batch([(checked, LIMITS) for checked in batch], mode)  # type: ignore[arg-type]
        assert refused.value.indexes == (3, 5)
        assert state(store) == before
    # nothing of the refused batch was remembered: its new ids decide afresh
    assert not store.check(item(request_id="new-1", resource="stream-1"), LIMITS).replayed


def test_an_in_batch_repeat_of_the_same_request_replays_the_earlier_item(store: Store) -> None:
    again = item(request_id="r", costs={"records": 3})
    decisions = store.check_batch([(again, LIMITS), (again, LIMITS)])
    assert [d.replayed for d in decisions] == [False, True]
    assert remaining(store, LIMITS) == [4, 97]


def test_a_dry_run_is_refused_an_id_a_real_check_holds_and_never_holds_one(store: Store) -> None:
    dry = replace(FIRST, dry_run=True)
    assert not store.check(dry, LIMITS).replayed
    assert not store.check(dry, LIMITS).replayed  # a dry run remembers nothing...
    assert not store.check(FIRST, LIMITS).replayed  # ...so the real check decides
    with pytest.raises(IdempotencyKeyReused):
        store.check(dry, LIMITS)
    with pytest.raises(IdempotencyKeyReused):
        store.check_batch([(replace(FIRST, request_id="r-9"), LIMITS), (replace(dry, request_id="r-9"), LIMITS)])


def test_after_the_window_the_id_may_name_another_request(store: Store, clock: ManualClock) -> None:
    store.check(FIRST, LIMITS)
    clock.advance(600_000)
    assert not store.check(replace(FIRST, costs={"records": 1}), LIMITS).replayed


def test_a_lease_request_is_its_ttl_and_never_a_check(store: Store) -> None:
    leased = item(request_id="lease-1")
    decision, lease_id, expires = store.lease_acquire(leased, SLOTS, 30)
    assert decision.allowed
    assert lease_id is not None
    assert store.lease_acquire(leased, SLOTS, 30) == (replace(decision, replayed=True), lease_id, expires)
    store.check(item(request_id="check-1"), [SLOTS])
    for other in (
        lambda: store.lease_acquire(leased, SLOTS, 31),
        lambda: store.check(leased, [SLOTS]),
        lambda: store.lease_acquire(item(request_id="check-1"), SLOTS, 30),
    ):
        with pytest.raises(IdempotencyKeyReused):
            other()
    slots = KeyLayout(store.key_prefix).counter_keys(SLOTS, leased)  # type: ignore[attr-defined]
    assert store.leases_live(list(slots)) == 1  # type: ignore[attr-defined]


def test_redis_writes_nothing_for_a_refused_call(
    redis_store: RedisStore, redis_client: redis.Redis, key_prefix: str
) -> None:
    redis_store.check(FIRST, LIMITS)
    keys = sorted(redis_client.scan_iter(match=f"{key_prefix}:*"))
    dumped = [redis_client.dump(key) for key in keys]

    with pytest.raises(IdempotencyKeyReused):
        redis_store.check_batch(
            [
                (item(request_id="n", resource="stream-1"), LIMITS),
                (FIRST, LIMITS),
                (replace(FIRST, resource="x"), LIMITS),
            ]
        )

    assert sorted(redis_client.scan_iter(match=f"{key_prefix}:*")) == keys
    assert [redis_client.dump(key) for key in keys] == dumped


def test_redis_replays_a_decision_stored_before_fingerprints(
    redis_store: RedisStore, redis_client: redis.Redis, clock: ManualClock
) -> None:
    key = KeyLayout(redis_store.key_prefix).idempotency_key(FIRST)
    assert key is not None
    old = f'{clock.now_ms()}|1,0,0,0,0,4,60000||[["minute","fixed_window","requests",5,false]]'
    redis_client.set(key, old, px=600_000)

    replayed = redis_store.check(replace(FIRST, costs={"records": 1}), [LIMITS[0]])

    assert (replayed.replayed, replayed.allowed, replayed.limits[0].remaining) == (True, True, 4)
    with pytest.raises(IdempotencyKeyReused):  # a dry run never matches a real check's decision
        redis_store.check(replace(FIRST, dry_run=True), [LIMITS[0]])
