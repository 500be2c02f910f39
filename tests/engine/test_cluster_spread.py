"""Checks over several Redis Cluster slots (store/spread.py): a customer limit beside per-IP and global ones is
reserved slot by slot and refunded on rejection, so it decides like the reference models and a refused check
consumes nothing on any node."""

from __future__ import annotations

import itertools
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from apps.engine import CheckItem, Decision, LimitSpec, ManualClock, MemoryStore
from apps.engine.store.cluster import ClusterStore
from tests.engine.conftest import START_MS
from tests.engine.test_lua_matches_reference import SETTINGS, STARTS, answer, limit_strategy
from tests.engine.test_seeding import Records
from tests.engine.usage_book import Tallied

pytestmark = pytest.mark.slow

SCOPES = [("customer",), ("ip",), ()]
ALGORITHMS = ["fixed_window", "calendar", "sliding_window", "sliding_log", "token_bucket", "leaky_bucket"]
CUSTOMER = LimitSpec("per-customer", "fixed_window", 10, period_s=60, key_by=("customer",), durable=True)
PER_IP = LimitSpec("per-ip", "sliding_log", 10, period_s=60, key_by=("ip",), durable=True)
GLOBAL = LimitSpec("global", "token_bucket", 3, period_s=60, key_by=(), durable=True)


def summary(result: Any) -> Any:
    """What both stores must agree on: the verdict, the delay, and each limit's verdict and remaining amount
    (a refused check's reset times are those after its reservation, which the refund does not rewind)."""
    if not isinstance(result, Decision):
        return result
    limits = tuple(
        (limit.name, limit.over, limit.remaining, limit.reset_ms if result.allowed else None) for limit in result.limits
    )
    return result.allowed, result.retry_after_ms, result.replayed, limits


def usage_of(store: Any) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[str, int]]]:
    """(counts per customer x operation x minute, records per counter x bucket) with zero amounts left out."""
    counts: Counter[tuple[Any, ...]] = Counter()
    records: Counter[tuple[str, int]] = Counter()
    for minute in store.usage_minutes():
        for row in store.usage_rows(minute):
            if row.customer:
                counts[(row.customer, row.operation, minute, "allowed")] += row.allowed
                counts[(row.customer, row.operation, minute, "denied")] += row.denied
                for unit, amount in row.costs.items():
                    counts[(row.customer, row.operation, minute, unit)] += amount
            records.update(row.records)
    return +counts, +records


class SpreadComparison(RuleBasedStateMachine):
    client: Any
    prefix: str
    counter = itertools.count()

    @initialize(data=st.data(), start=st.sampled_from(STARTS))
    def set_up(self, data: st.DataObject, start: int) -> None:
        algorithms = data.draw(st.lists(st.sampled_from(ALGORITHMS), min_size=2, max_size=3))
        self.specs = [
            replace(
                data.draw(limit_strategy(algorithm)),
                name=f"l{number}",
                key_by=data.draw(st.sampled_from(SCOPES)),
                unit=data.draw(st.sampled_from(["requests", "records"])),
            )
            for number, algorithm in enumerate(algorithms)
        ]
        self.cluster_clock, self.memory_clock = ManualClock(start), ManualClock(start)
        prefix = f"{self.prefix}:spread:{next(self.counter)}"
        self.cluster = Tallied(ClusterStore(self.client, prefix, clock=self.cluster_clock))
        self.memory = Tallied(MemoryStore(prefix, clock=self.memory_clock))

    @rule(step=st.integers(0, 2_000) | st.sampled_from([60_000, 3_600_000]))
    def advance(self, step: int) -> None:
        self.cluster_clock.advance(step)
        self.memory_clock.advance(step)

    def item(self, customer: str, ip: str, requests: int, records: int, **extra: Any) -> CheckItem:
        return CheckItem(customer, "PutRecords", ip=ip, costs={"requests": requests, "records": records}, **extra)

    @rule(
        customer=st.sampled_from(["a", "b"]),
        ip=st.sampled_from(["198.51.100.1", "198.51.100.2"]),
        requests=st.integers(0, 3),
        records=st.integers(0, 9),
        request_id=st.none() | st.sampled_from(["r1", "r2"]),
        dry_run=st.booleans(),
    )
    def check(self, customer: str, ip: str, requests: int, records: int, request_id: str | None, dry_run: bool) -> None:
        item = self.item(customer, ip, requests, records, request_id=request_id, dry_run=dry_run)
        expected = summary(answer(lambda: self.memory.check(item, self.specs)))
        assert summary(answer(lambda: self.cluster.check(item, self.specs))) == expected

    @rule(
        items=st.lists(
            st.tuples(
                st.sampled_from(["a", "b"]), st.sampled_from(["198.51.100.1"]), st.integers(0, 2), st.integers(0, 6)
            ),
            max_size=4,
        )
    )
    def batch(self, items: list[tuple[str, str, int, int]]) -> None:
        pairs = [(self.item(*entry), self.specs) for entry in items]
        expected = [summary(decision) for decision in self.memory.check_batch(pairs)]
        assert [summary(decision) for decision in self.cluster.check_batch(pairs)] == expected

    def teardown(self) -> None:
        if hasattr(self, "cluster"):  # usage and records are counted alike
            assert usage_of(self.cluster) == usage_of(self.memory)


def test_checks_over_several_slots_decide_like_the_reference(cluster_client: Any, cluster_prefix: str) -> None:
    machine = type("CompareSpread", (SpreadComparison,), {"client": cluster_client, "prefix": cluster_prefix})
    run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=60))


def remaining(store: ClusterStore, item: CheckItem) -> list[int]:
    return [limit.remaining for limit in store.check(replace(item, dry_run=True), [CUSTOMER, PER_IP, GLOBAL]).limits]


def test_a_check_refused_by_its_global_limit_consumes_nothing_on_any_node(
    cluster_client: Any, cluster_prefix: str
) -> None:
    records = Records()
    store = Tallied(ClusterStore(cluster_client, cluster_prefix, clock=ManualClock(START_MS + 30_000), seeder=records))
    limits = [CUSTOMER, PER_IP, GLOBAL]
    home = cluster_client.get_node_from_key("{c=acct-1}").name
    # An address whose counters live on another node than the customer's: the check spans nodes, not only slots.
    ip = next(
        f"203.0.113.{n}" for n in range(256) if cluster_client.get_node_from_key(f"{{i=203.0.113.{n}}}").name != home
    )
    item = CheckItem("acct-1", "PutRecords", ip=ip)
    assert [store.check(item, limits).allowed for _ in range(3)] == [True, True, True]
    assert remaining(store, item) == [7, 7, 0]
    refused = store.check(item, limits)
    assert (refused.allowed, [limit.over for limit in refused.limits]) == (False, [False, False, True])
    assert [limit.remaining for limit in refused.limits] == [7, 7, 0]
    assert remaining(store, item) == [7, 7, 0]  # the customer and IP reservations were given back
    counts, spent = usage_of(store)
    assert (counts[("acct-1", "PutRecords", (START_MS + 30_000) // 60_000, "allowed")], sum(counts.values())) == (3, 7)
    assert sorted(spent.values()) == [3, 3, 3]  # what was spent and kept, per durable counter
    records.collect(store)  # the flush's part: records of every slot, usage of the customer's
    assert sorted(records.amounts.values()) == [3, 3, 3]


def test_a_refused_check_gives_back_its_reservations_under_contention(cluster_client: Any, cluster_prefix: str) -> None:
    store = Tallied(ClusterStore(cluster_client, cluster_prefix, clock=ManualClock(START_MS + 30_000)))
    wide = LimitSpec("wide", "fixed_window", 1000, period_s=60, key_by=())  # away: reserved, then refunded
    narrow = LimitSpec("narrow", "fixed_window", 30, period_s=60, key_by=("customer",))  # home: refuses
    item = CheckItem("hot-customer", "Op", ip="203.0.113.9")
    with ThreadPoolExecutor(8) as pool:
        verdicts = list(pool.map(lambda _: store.check(item, [wide, narrow]).allowed, range(120)))
    assert sum(verdicts) == 30
    assert [limit.remaining for limit in store.check(replace(item, dry_run=True), [wide, narrow]).limits] == [970, 0]
