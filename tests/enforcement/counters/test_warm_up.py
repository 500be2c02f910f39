"""The warm-up after Redis came up empty (counters/warm_up.py): it rebuilds every open durable counter exactly as the
per-counter seeding would, then marks the epoch warm, after which a check on a missing counter is one script call."""

from __future__ import annotations

import dataclasses
import logging
import threading

import pytest
from django.db import connection

from apps.enforcement.counters.recovery import counters_reconcile, rebuilds_mark
from apps.enforcement.counters.warm_up import counters_warm
from apps.engine import CheckItem
from apps.engine.keys import KeyLayout
from tests.api_fixtures import NOON_MS
from tests.customers.factories import CustomerFactory
from tests.enforcement.counters.warm_fixtures import (
    DURABLE,
    HOUR_MS,
    CountingSeeder,
    CountingStore,
    counter_state,
    durable_limit,
    lose_redis,
    record_spending,
    spec_of,
)
from tests.limits.factories import OverrideFactory

pytestmark = pytest.mark.django_db
SCOPES = [["customer"], ["customer", "resource"], ["ip"], []]
ITEM = CheckItem("acct-1", "Op", resource="stream-1", ip="203.0.113.7", timezone="Europe/Paris")
NOW = NOON_MS + 30 * 60_000  # 12:30 UTC: the hour's window began at 12:00
SPENT = [(NOW - 2 * HOUR_MS, 4), (NOW - 50 * 60_000, 3), (NOW - 20 * 60_000, 5), (NOW - 30_000, 2)]
IN_THIS_HOUR = 5 + 2


@pytest.fixture
def seeder() -> CountingSeeder:
    return CountingSeeder()


@pytest.fixture
def store(redis_client, key_prefix, clock, seeder) -> CountingStore:
    clock.set(NOW)
    return CountingStore(redis_client, key_prefix=key_prefix, clock=clock, seeder=seeder)


@pytest.mark.parametrize("scope", SCOPES, ids=lambda scope: "+".join(scope) or "global")
@pytest.mark.parametrize("algorithm", DURABLE)
def test_it_rebuilds_each_counter_as_the_per_counter_seeding_would(
    store, seeder, redis_client, key_prefix, algorithm, scope
) -> None:
    CustomerFactory(external_id="acct-1", timezone="Europe/Paris")
    spec = spec_of(durable_limit(algorithm, key_by=scope))
    layout = KeyLayout(key_prefix)
    counter = record_spending(layout, spec, ITEM, SPENT)

    report = counters_warm(store=store)
    warmed = counter_state(redis_client, layout, counter)
    lose_redis(redis_client, key_prefix)
    store.check(CheckItem(**{**_fields(ITEM), "costs": {"requests": 0}}), [spec])  # writes its seed, spends nothing
    seeded = counter_state(redis_client, layout, counter)

    assert len(seeder.asked) == 1  # the second store went the per-counter way
    assert (report.cold, report.counters, report.unmatched) == (1, 1, 0)
    assert warmed == seeded
    assert warmed != (None,)  # something was spent in reach of every algorithm's look-back


def test_after_the_warm_up_a_missing_counter_is_new_one_script_call_and_no_seed(store, seeder, redis_client) -> None:
    CustomerFactory(external_id="acct-1")
    spec = spec_of(durable_limit("fixed_window"))
    record_spending(store._layout, spec, ITEM, SPENT)
    counters_warm(store=store)
    rebuilt, fresh = store.check(ITEM, [spec]), store.check(CheckItem("acct-2", "Op"), [spec])

    assert (store.calls, seeder.asked) == (2, [])
    assert rebuilt.limits[0].remaining == 50 - IN_THIS_HOUR - 1
    assert fresh.limits[0].remaining == 49


def test_before_the_warm_up_a_missing_counter_is_still_seeded(store, seeder) -> None:
    spec = spec_of(durable_limit("fixed_window"))
    record_spending(store._layout, spec, ITEM, SPENT)

    assert store.check(ITEM, [spec]).limits[0].remaining == 50 - IN_THIS_HOUR - 1
    # Its shape's script hands over (the counter may have been lost), check.lua asks for the seed, then decides.
    assert (store.calls, len(seeder.asked)) == (3, 1)


def test_a_warm_store_is_left_alone_and_a_second_run_writes_nothing(store, redis_client, caplog) -> None:
    spec = spec_of(durable_limit("calendar"))
    counter = record_spending(store._layout, spec, ITEM, SPENT)
    with caplog.at_level(logging.WARNING, logger="apps.enforcement.counters.warm_up"):
        first = counters_warm(store=store)
    assert "Redis counters found cold" in caplog.text
    redis_client.set(store._layout.keys_of_counter(counter)[0], "changed", keepttl=True)

    again = counters_warm(store=store)
    redis_client.delete(store._layout.warm_key())
    third = counters_warm(store=store)

    assert (first.cold, first.counters) == (1, 1)
    assert again.cold == 0
    assert (third.cold, third.counters, third.present) == (1, 0, 1)
    assert redis_client.get(store._layout.keys_of_counter(counter)[0]) == b"changed"  # never clobbered


def test_the_mark_goes_with_the_epoch_counters_reconcile_resets_and_the_next_run_warms_again(
    store, redis_client
) -> None:
    spec = spec_of(durable_limit("fixed_window"))
    counter = record_spending(store._layout, spec, ITEM, SPENT)
    counters_warm(store=store)
    assert redis_client.exists(store._layout.warm_key(), store._layout.epoch_key()) == 2
    rebuilds_mark(counters=[counter])

    assert counters_reconcile(store=store) == 1
    assert redis_client.exists(store._layout.warm_key(), store._layout.epoch_key()) == 0
    assert counters_warm(store=store).counters == 1
    assert redis_client.exists(store._layout.warm_key()) == 1


def test_a_counter_is_rebuilt_with_the_override_its_customer_has(store, redis_client) -> None:
    limit = durable_limit("token_bucket", key_by=["customer"])
    OverrideFactory(customer=CustomerFactory(external_id="acct-1"), limit=limit, quantity=500)
    spec = spec_of(limit)
    counter = record_spending(store._layout, spec, ITEM, SPENT)
    counters_warm(store=store)
    warmed = counter_state(redis_client, store._layout, counter)
    lose_redis(redis_client, store._layout.prefix)

    store.check(CheckItem("acct-1", "Op", costs={"requests": 0}), [dataclasses.replace(spec, quantity=500)])

    assert counter_state(redis_client, store._layout, counter) == warmed


@pytest.mark.django_db(transaction=True)
def test_checks_racing_the_warm_up_never_count_twice_nor_lose_spending(store, redis_client) -> None:
    spec = spec_of(durable_limit("fixed_window", quantity=100_000))
    items = [CheckItem(f"acct-{n}", "Op") for n in range(200)]
    counters = [record_spending(store._layout, spec, item, [(NOW - 60_000, 7)]) for item in items]
    admitted = [0] * len(items)
    start = threading.Barrier(5)

    def check(offset: int) -> None:
        start.wait()
        try:
            for n in range(offset, len(items), 4):
                admitted[n] += store.check(items[n], [spec]).allowed
        finally:
            connection.close()  # the seeder's, in this thread

    threads = [threading.Thread(target=check, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    start.wait()
    report = counters_warm(store=store)
    for thread in threads:
        thread.join()

    used = [int(redis_client.get(store._layout.keys_of_counter(c)[0]).split(b":")[1]) for c in counters]
    assert used == [7 + n for n in admitted]
    assert admitted == [1] * len(items)
    assert report.counters + report.present == len(items)


def _fields(item: CheckItem) -> dict:
    return {name: getattr(item, name) for name in item.__dataclass_fields__}
