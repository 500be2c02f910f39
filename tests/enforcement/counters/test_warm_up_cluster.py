"""The warm-up on a Redis Cluster: epochs and marks per hash tag, so each customer's slot is warmed on its own."""

from __future__ import annotations

import pytest

from apps.enforcement.counters.warm_up import counters_warm
from apps.engine import CheckItem
from apps.engine.store.cluster import ClusterStore
from tests.api_fixtures import NOON_MS
from tests.customers.factories import CustomerFactory
from tests.enforcement.counters.warm_fixtures import (
    CallCounting,
    CountingSeeder,
    durable_limit,
    record_spending,
    spec_of,
)

pytestmark = pytest.mark.django_db
NOW = NOON_MS + 30 * 60_000


class CountingClusterStore(CallCounting, ClusterStore):
    """A ClusterStore counting its check script calls."""


def test_each_customer_slot_is_warmed_and_marked_and_then_a_check_is_one_call(cluster_client, clock) -> None:
    clock.set(NOW)
    seeder = CountingSeeder()
    store = CountingClusterStore(cluster_client, cluster_client.test_prefix, clock=clock, seeder=seeder)
    layout = store._layout
    customers = [f"acct-{n}" for n in range(6)]
    for customer in customers:
        CustomerFactory(external_id=customer)
    spec = spec_of(durable_limit("calendar"))
    for customer in customers[:4]:
        record_spending(layout, spec, CheckItem(customer, "Op"), [(NOW - 60_000, 5)])

    report = counters_warm(store=store)
    cluster_client.delete(layout.warm_key("{c=acct-0}"))  # acct-0's node lost its data
    again = counters_warm(store=store)

    assert (report.cold, report.counters) == (6, 4)  # every customer's slot, with records or without
    assert (again.cold, again.counters, again.present) == (1, 0, 1)
    assert all(cluster_client.exists(layout.warm_key(f"{{c={c}}}")) for c in customers)
    assert store.check(CheckItem("acct-1", "Op"), [spec]).limits[0].remaining == 50 - 5 - 1
    assert store.check(CheckItem("acct-5", "Op"), [spec]).limits[0].remaining == 49
    assert (store.calls, seeder.asked) == (2, [])
