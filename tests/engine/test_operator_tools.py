"""The stores' operator tools (admin usage page, unblock): list, delete and count leases, on both stores."""

from apps.engine import CheckItem, LimitSpec

DAILY = LimitSpec("daily", "fixed_window", 10, period_s=86400, key_by=("customer",))
SLOTS = LimitSpec("slots", "concurrency", 3, key_by=("customer", "resource"))


def test_keys_are_listed_by_their_start_deleted_and_their_leases_counted(store) -> None:
    store.check(CheckItem("acct-1", "Op"), [DAILY])
    store.check(CheckItem("acct-2", "Op"), [DAILY])
    for resource in ("a", "b", "b"):
        store.lease_acquire(CheckItem("acct-1", "Stream", resource=resource), SLOTS, 60)

    head = f"{store.key_prefix}:c:{{c=acct-1}}:"
    keys = store.counter_keys(head)
    assert len(keys) == 3
    assert all(key.startswith(head) for key in keys)
    lease_keys = [key for key in keys if "slots" in key]
    assert store.leases_live(lease_keys) == 3

    assert store.counters_delete(keys) == 3
    assert store.counter_keys(head) == []
    assert store.counters_delete([]) == 0
    assert store.check(CheckItem("acct-1", "Op"), [DAILY]).limits[0].remaining == 9  # unblocked
    assert store.check(CheckItem("acct-2", "Op"), [DAILY]).limits[0].remaining == 8  # untouched


def test_a_glob_character_in_the_start_is_taken_literally(store) -> None:
    store.check(CheckItem("acct-1", "Op"), [DAILY])
    assert store.counter_keys(f"{store.key_prefix}:c:{{c=acct-*") == []
