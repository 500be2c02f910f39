"""Concurrency leases: acquire, renew, release, and expiry without anyone releasing."""

from __future__ import annotations

import pytest

from apps.engine import CheckItem, InvalidCheck, LimitSpec, ManualClock, lease_owner
from apps.engine.store.base import Store

SLOTS = LimitSpec("slots", "concurrency", 2, key_by=("customer",))


def item(customer: str = "acct-1", **extra: object) -> CheckItem:
    return CheckItem(customer, "Export", **extra)  # type: ignore[arg-type]


def acquire(store: Store, customer: str = "acct-1", ttl_s: int = 30) -> str | None:
    return store.lease_acquire(item(customer), SLOTS, ttl_s)[1]


def test_at_most_limit_leases_are_held_and_release_frees_a_slot(store: Store, clock: ManualClock) -> None:
    first, second = acquire(store), acquire(store)
    assert first
    assert second
    assert first != second
    decision, lease_id, expires = store.lease_acquire(item(), SLOTS, 30)
    assert (decision.allowed, lease_id, expires, decision.retry_after_ms) == (False, None, 0, 30_000)
    store.lease_release(first)
    store.lease_release(first)  # idempotent
    assert acquire(store) is not None
    assert acquire(store, customer="acct-2") is not None


def test_an_expired_lease_stops_counting_without_a_release(store: Store, clock: ManualClock) -> None:
    acquire(store, ttl_s=10)
    acquire(store, ttl_s=20)
    clock.advance(9_999)
    assert acquire(store) is None
    clock.advance(1)
    assert acquire(store) is not None


def test_renew_extends_a_live_lease_and_refuses_an_expired_one(store: Store, clock: ManualClock) -> None:
    decision, lease_id, expires = store.lease_acquire(item(), SLOTS, 10)
    assert decision.allowed
    assert lease_id is not None
    assert expires == clock.now_ms() + 10_000
    clock.advance(9_000)
    assert store.lease_renew(lease_id, 10) == clock.now_ms() + 10_000
    clock.advance(9_000)
    assert acquire(store) is not None
    assert acquire(store) is None
    clock.advance(1_000)
    assert store.lease_renew(lease_id, 10) is None


def test_a_lease_id_tells_its_owner_and_cannot_touch_another_customers_lease(store: Store) -> None:
    victim = acquire(store, customer="victim")
    assert victim is not None
    assert lease_owner(victim) == "victim"
    mine = acquire(store, customer="mallory")
    assert mine is not None
    key_part, _, token = victim.split(".")
    forged = f"{key_part}.{mine.split('.')[1]}.{token}"
    assert lease_owner(forged) == "mallory"
    assert store.lease_renew(forged, 30) is None
    store.lease_release(forged)
    store.lease_release("garbage")
    assert store.lease_renew("garbage", 30) is None
    assert store.lease_acquire(item("victim"), SLOTS, 30)[0].limits[0].remaining == 0  # victim still holds 1 of 2


def test_lease_acquire_checks_other_limits_in_the_same_step(store: Store) -> None:
    per_minute = LimitSpec("starts", "fixed_window", 1, period_s=60, key_by=("customer",))
    assert store.lease_acquire(item(), SLOTS, 30, others=[per_minute])[1] is not None
    decision, lease_id, _ = store.lease_acquire(item(), SLOTS, 30, others=[per_minute])
    assert (decision.allowed, lease_id) == (False, None)
    assert store.check(item(dry_run=True), [SLOTS]).limits[0].remaining == 1


def test_a_lease_needs_a_concurrency_limit_and_a_positive_ttl(store: Store) -> None:
    with pytest.raises(InvalidCheck):
        store.lease_acquire(item(), LimitSpec("l", "fixed_window", 1, period_s=1), 30)
    with pytest.raises(InvalidCheck):
        store.lease_acquire(item(), SLOTS, 0)
