"""Session time through both stores: leases acquired and renewed until the window's time is spent, and the
session seconds they hold counted in usage per minute."""

from __future__ import annotations

import pytest

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.base import Store
from apps.engine.types import SessionTimeSpent

MINUTE = 60_000
SLOTS = LimitSpec("slots", "concurrency", 5, key_by=("customer",))
TIME = LimitSpec("time", "session_time", 10, period_s=60, unit="seconds", key_by=("customer",))


def acquire(store: Store, ttl_s: int = 30, customer: str = "acct-1") -> tuple[bool, int | None, str | None]:
    decision, lease_id, _ = store.lease_acquire(CheckItem(customer, "Export"), SLOTS, ttl_s, [TIME])
    return decision.allowed, decision.retry_after_ms, lease_id


def session_ms(store: Store) -> dict[int, int]:
    return {minute: sum(row.session_ms for row in store.usage_rows(minute)) for minute in store.usage_minutes()}


def test_acquire_is_refused_once_the_window_time_is_spent_until_the_window_ends(
    store: Store, clock: ManualClock
) -> None:
    assert acquire(store)[0]
    clock.advance(4_000)
    assert acquire(store)[0]  # 4 s used
    clock.advance(3_000)  # 7 s + 3 s = 10 s: spent
    assert acquire(store)[:2] == (False, MINUTE - 7_000)
    assert acquire(store, customer="acct-2")[0]  # another customer's time is its own
    clock.advance(MINUTE - 7_000 - 1)
    assert acquire(store)[:2] == (False, 1)
    clock.advance(1)
    assert acquire(store)[0]


def test_renew_is_refused_when_spent_and_the_lease_keeps_its_expiry(store: Store, clock: ManualClock) -> None:
    allowed, _, lease_id = acquire(store, ttl_s=20)
    assert allowed
    assert lease_id is not None
    clock.advance(9_000)
    assert store.lease_renew(lease_id, 59) == clock.now_ms() + 59_000  # held until 68 s
    clock.advance(1_000)
    with pytest.raises(SessionTimeSpent) as refused:
        store.lease_renew(lease_id, 20)
    assert refused.value.retry_after_ms == MINUTE - 10_000
    held = store.lease_acquire(CheckItem("acct-1", "Export"), SLOTS, 5, [TIME])[0].limits[0]
    assert held.remaining == 4  # the lease is still held (until 68 s), and that acquire was refused
    clock.advance(MINUTE - 10_000)
    assert store.lease_renew(lease_id, 20) == clock.now_ms() + 20_000  # a new window


def test_a_plain_check_only_looks(store: Store, clock: ManualClock) -> None:
    assert acquire(store)[0]
    clock.advance(10_000)
    decision = store.check(CheckItem("acct-1", "Export"), [TIME])
    assert (decision.allowed, decision.retry_after_ms, decision.limits[0].remaining) == (False, MINUTE - 10_000, 0)
    clock.advance(MINUTE - 10_000)
    decision = store.check(CheckItem("acct-1", "Export"), [TIME])
    assert (decision.allowed, decision.limits[0].remaining) == (True, 10)  # the lease's 20 s left start again
    assert store.check(CheckItem("acct-1", "Export"), [TIME]).limits[0].remaining == 10  # nothing taken


def test_a_released_sessions_time_stays_spent(store: Store, clock: ManualClock) -> None:
    _, _, lease_id = acquire(store)
    assert lease_id is not None
    clock.advance(6_000)
    store.lease_release(lease_id)
    store.lease_release(lease_id)  # idempotent: counted once
    clock.advance(20_000)
    assert store.check(CheckItem("acct-1", "Export"), [TIME]).limits[0].remaining == 4


def test_usage_counts_session_time_per_minute_from_lease_lifetimes(store: Store, clock: ManualClock) -> None:
    start = clock.now_ms() // MINUTE
    clock.advance(50_000)
    _, _, released = acquire(store, ttl_s=30)  # held 50 s .. 70 s: released at 70 s
    _, _, expired = acquire(store, ttl_s=30, customer="acct-2")  # 50 s .. 80 s, nobody releases it
    _, _, renewed = acquire(store, ttl_s=30, customer="acct-3")  # 50 s .. renewed at 60 s to 65 s, released
    assert released
    assert expired
    assert renewed
    clock.advance(10_000)
    assert store.lease_renew(renewed, 5) == clock.now_ms() + 5_000
    clock.advance(10_000)
    store.lease_release(released)
    store.lease_release(renewed)  # already expired: counted up to its expiry
    assert session_ms(store) == {start: 3 * 10_000, start + 1: 10_000 + 20_000 + 5_000}
    by_customer = {row.customer: row.session_ms for row in store.usage_rows(start + 1)}
    assert by_customer == {"acct-1": 10_000, "acct-2": 20_000, "acct-3": 5_000}


def test_a_lease_without_session_time_limits_still_counts_its_time(store: Store, clock: ManualClock) -> None:
    _, lease_id, _ = store.lease_acquire(CheckItem("acct-1", "Export"), SLOTS, 10)
    assert lease_id is not None
    clock.advance(4_000)
    store.lease_release(lease_id)
    assert session_ms(store) == {clock.now_ms() // MINUTE: 4_000}
