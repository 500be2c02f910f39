"""MemoryStore housekeeping: nothing it holds grows without bound."""

from __future__ import annotations

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.store import memory


def test_expired_state_and_request_ids_are_swept(clock: ManualClock, memory_store: MemoryStore) -> None:
    limits = [LimitSpec("l", "sliding_log", 5, period_s=1, key_by=("customer",))]
    for n in range(50):
        memory_store.check(CheckItem(f"acct-{n}", "Op", request_id=f"r{n}"), limits)
    assert len(memory_store._states) == 50
    assert len(memory_store._remembered) == 50
    clock.advance(600_000)
    for _ in range(memory.SWEEP_EVERY):
        memory_store.check(CheckItem("acct-x", "Op"), limits)
    assert list(memory_store._states) == [next(iter(memory_store._states))]
    assert len(memory_store._remembered) == 0


def test_session_time_older_than_two_days_is_dropped(clock: ManualClock) -> None:
    """The store keeps only what leases booked of session time (the decisions' usage is the caller's tally)."""
    store = MemoryStore("mem", clock=clock)
    store.lease_acquire(CheckItem("acct", "Op"), LimitSpec("slots", "concurrency", 10**6), 1)
    assert len(store.usage_minutes()) == 1
    clock.advance(2 * 86_400_000 + 60_000)
    limits = [LimitSpec("l", "fixed_window", 10**6, period_s=1)]
    for _ in range(memory.SWEEP_EVERY):
        store.check(CheckItem("acct", "Op"), limits)
    assert store.usage_minutes() == []
