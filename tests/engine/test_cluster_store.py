"""ClusterStore on a real Redis Cluster of 3 masters and 3 replicas (tests/servers.py, started once per run):
the same decisions as the reference models, exact limits under contention from two processes, batches split
per slot and pipelined per node, usage flushed from every master, lost counters rebuilt
(atomic batches over several slots: test_cluster_atomic.py)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.store.cluster import ClusterStore, slot_groups
from apps.engine.store.plan import plan_item
from tests.engine.conftest import START_MS
from tests.engine.race_worker import hammer
from tests.engine.test_lua_matches_reference import ALGORITHMS, SETTINGS, EngineComparison
from tests.engine.test_seeding import Records
from tests.engine.usage_book import Tallied

pytestmark = pytest.mark.slow

MINUTE = LimitSpec("per-minute", "fixed_window", 5, period_s=60, key_by=("customer",), durable=True)
PER_RESOURCE = LimitSpec("per-resource", "token_bucket", 3, period_s=60, key_by=("customer", "resource"), durable=True)
PER_IP = LimitSpec("per-ip", "fixed_window", 100, period_s=60, key_by=("ip",))


@pytest.fixture
def prefix(cluster_client: Any, cluster_prefix: str) -> str:
    return cluster_prefix


@pytest.fixture
def store(cluster_client: Any, prefix: str) -> ClusterStore:
    return Tallied(ClusterStore(cluster_client, prefix, clock=ManualClock(START_MS + 30_000)))


def keys_under(client: Any, prefix: str) -> list[bytes]:
    return list(client.scan_iter(match=f"{prefix}:*", count=1000))


def evalsha_calls(client: Any) -> int:
    stats = client.info("commandstats", target_nodes=client.PRIMARIES)
    return sum(int(node.get("cmdstat_evalsha", {}).get("calls", 0)) for node in stats.values())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_cluster_store_decides_like_the_reference_model(algorithm: str, cluster_client: Any, prefix: str) -> None:
    machine = type(
        f"ClusterCompare_{algorithm}",
        (EngineComparison,),
        {
            "client": cluster_client,
            "prefix": prefix,
            "algorithm": algorithm,
            "store_class": ClusterStore,
        },
    )
    run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=30))


def test_a_batch_over_100_customers_is_one_call_per_slot_and_decides_like_one_redis(
    cluster_client: Any, store: ClusterStore, prefix: str
) -> None:
    pairs = [(CheckItem(f"acct-{n % 100}", "PutRecords", resource="s"), [MINUTE, PER_RESOURCE]) for n in range(300)]
    store.check_batch(pairs[:1])  # the script is loaded on that node; the others load it on their first call
    memory = Tallied(MemoryStore(prefix, clock=ManualClock(START_MS + 30_000)))
    memory.check_batch(pairs[:1])
    plans = [plan_item(store._layout, item, limits, START_MS) for item, limits in pairs]
    before = evalsha_calls(cluster_client)
    decisions = store.check_batch(pairs)
    assert decisions == memory.check_batch(pairs)
    assert sum(decision.allowed for decision in decisions) == 100 * 3 - 1  # per-resource: 3 each, one spent
    # One EVALSHA per slot (plus one per master that had not loaded the script yet and answered NOSCRIPT).
    groups, spread = slot_groups(plans)
    assert (len(groups), spread) == (100, [])
    assert len(groups) <= evalsha_calls(cluster_client) - before <= len(groups) + 3


def test_usage_is_flushed_from_every_master_and_then_discarded(cluster_client: Any, store: ClusterStore) -> None:
    pairs = [(CheckItem(f"acct-{n}", "PutRecords", resource="s"), [MINUTE]) for n in range(60)]
    store.check_batch(pairs + pairs)
    [minute] = store.usage_minutes()
    rows = store.usage_rows(minute)
    assert sorted(row.customer for row in rows) == sorted(f"acct-{n}" for n in range(60))
    assert all(row.allowed == 2 and row.denied == 0 for row in rows)
    masters = {cluster_client.get_node_from_key(f"{{c=acct-{n}}}").name for n in range(60)}
    assert len(masters) == 3  # the customers' usage really was spread over every master
    store.usage_discard(minute)
    assert store.usage_minutes() == []
    assert store.usage_rows(minute) == []


def test_leases_on_the_cluster(store: ClusterStore) -> None:
    seats = LimitSpec("seats", "concurrency", 2, key_by=("customer",))
    item = CheckItem("acct-1", "Session")
    first, second, third = (store.lease_acquire(item, seats, 60) for _ in range(3))
    assert (first[0].allowed, second[0].allowed, third[0].allowed) == (True, True, False)
    assert first[1] is not None
    assert store.lease_renew(first[1], 120) is not None
    store.lease_release(first[1])
    assert store.lease_acquire(item, seats, 60)[0].allowed


def test_a_master_emptied_of_its_data_rebuilds_durable_counters_from_their_records(
    cluster_client: Any, prefix: str
) -> None:
    records, clock = Records(), ManualClock(START_MS + 30_000)
    store = Tallied(ClusterStore(cluster_client, prefix, clock=clock, seeder=records))
    item = CheckItem("acct-lost", "PutRecords")
    assert sum(store.check(item, [MINUTE]).allowed for _ in range(3)) == 3
    records.collect(store)
    node = cluster_client.get_node_from_key("{c=acct-lost}")
    cluster_client.flushall(target_nodes=node)  # the node's data is gone (its replica follows the flush)
    assert [store.check(item, [MINUTE]).allowed for _ in range(3)] == [True, True, False]


def test_a_master_emptied_of_its_data_rebuilds_the_allocations_it_held(cluster_client: Any, prefix: str) -> None:
    kept: dict[str, list[str]] = {}  # what PostgreSQL keeps (apps/enforcement/leases/durable.py), per counter
    store = Tallied(ClusterStore(cluster_client, prefix, seeder=lambda asked: [kept.get(r.counter, []) for r in asked]))
    streams, item = LimitSpec("streams", "concurrency", 3, key_by=("customer",)), CheckItem("acct-kept", "CreateStream")
    first = store.lease_acquire(item, streams, None)[1]
    assert first is not None
    held = store.allocations_set(item, streams, 3)
    kept[held.counter] = list(held.members)
    node = cluster_client.get_node_from_key("{c=acct-kept}")
    cluster_client.flushall(target_nodes=node)  # the node's data is gone, its epoch and warm mark with it

    assert not store.lease_acquire(item, streams, None)[0].allowed  # the set was rebuilt before deciding
    (key,) = [key for key in keys_under(cluster_client, prefix) if b":cc:" in key]
    assert cluster_client.pttl(key) == -1
    store.lease_release(first)  # an id from before the loss still names its allocation
    assert store.lease_acquire(item, streams, None)[0].allowed


@pytest.mark.race
def test_exactly_the_limit_is_admitted_by_two_processes_of_threads(redis_cluster: Any, prefix: str) -> None:
    spec = LimitSpec("hot", "fixed_window", 50, period_s=60, key_by=("customer",))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        there = pool.submit(hammer, redis_cluster.url, prefix, spec, 8, 10, START_MS)
        here = hammer(redis_cluster.url, prefix, spec, 8, 10, START_MS)
        verdicts = here + there.result(timeout=120)
    assert len(verdicts) == 160
    assert sum(verdicts) == 50
