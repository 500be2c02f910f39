"""Atomic batches over several Redis Cluster slots (store/atomic_slots.py), on a real cluster of 3 masters: all or
nothing, reserved slot by slot and refunded on refusal. A refused batch leaves every counter as it found it and
tallies no usage; an admitted one spends on every slot; many threads sending overlapping batches never admit past a
limit and leave the counters equal to the usage tallied. (Each answer against the reference model, logs included:
test_cluster_store.py's comparison, whose atomic batches name customers on two slots.)"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

import pytest

from apps.engine import CheckItem, IdempotencyKeyReused, LimitSpec, ManualClock
from apps.engine.decision_usage import decision_usage
from apps.engine.registry import ALGORITHMS as REGISTRY
from apps.engine.store.cluster import ClusterStore
from apps.engine.store.cluster.slots import slot_of
from tests.engine.conftest import START_MS
from tests.engine.test_decision_log_store import redis_log
from tests.engine.usage_book import Tallied

pytestmark = pytest.mark.slow

PER_CUSTOMER = LimitSpec("per-customer", "fixed_window", 3, period_s=60, key_by=("customer",), durable=True, audit=True)
GLOBAL = LimitSpec("global", "token_bucket", 10, period_s=3600, key_by=())
NOW = START_MS + 30_000


@pytest.fixture
def store(cluster_client: Any, cluster_prefix: str) -> Any:
    return Tallied(ClusterStore(cluster_client, cluster_prefix, clock=ManualClock(NOW)))


def two_slots(store: Any) -> tuple[str, str]:
    """Two customers whose counters live on different slots (and, here, different masters)."""
    first = "acct-a"
    for n in range(100):
        other = f"acct-{n}"
        if slot_of(f"{{c={other}}}") != slot_of(f"{{c={first}}}") and node(store, other) != node(store, first):
            return first, other
    raise AssertionError("no two customers on different masters")


def node(store: Any, customer: str) -> str:
    return str(store.node_of_customer(customer))


def state(store: Any, customer: str, spec: LimitSpec = PER_CUSTOMER) -> Any:
    """The raw counter of `customer` (what Redis holds, not what a check reports)."""
    [key, *_] = store._layout.counter_keys(spec, CheckItem(customer, "Op"))
    return store._client.get(key)


def remaining(store: Any, customer: str, specs: list[LimitSpec]) -> list[int]:
    decision = store.check(CheckItem(customer, "Op", dry_run=True), specs)
    return [limit.remaining for limit in decision.limits]


def usage(store: Any) -> dict[str, tuple[int, int]]:
    """{customer: (allowed, denied)} as the platform tallies it."""
    rows = [row for minute in store.usage_minutes() for row in store.usage_rows(minute)]
    return {row.customer: (row.allowed, row.denied) for row in rows}


def test_one_customer_over_its_limit_refuses_the_whole_batch_and_the_other_slot_is_given_back(store: Any) -> None:
    full, other = two_slots(store)
    assert [store.check(CheckItem(full, "Op"), [PER_CUSTOMER]).allowed for _ in range(3)] == [True] * 3
    assert store.check(CheckItem(other, "Op"), [PER_CUSTOMER]).allowed
    before = (state(store, full), state(store, other))
    tallied = usage(store)

    # The other customer's slot comes first and reserves: the refusal on the second slot refunds it.
    for order in ((other, full), (full, other)):
        decisions = store.check_batch([(CheckItem(customer, "Op"), [PER_CUSTOMER]) for customer in order], "atomic")

        assert [decision.allowed for decision in decisions] == [False, False]
        assert all(decision.retry_after_ms == 30_000 for decision in decisions)  # the full window's end
        by_customer = dict(zip(order, decisions, strict=True))
        assert by_customer[full].limits[0].over
        assert not by_customer[other].limits[0].over
        assert by_customer[other].limits[0].remaining == 2  # what it saw, before any reservation
        assert (state(store, full), state(store, other)) == before
    assert usage(store) == {full: (tallied[full][0], 2), other: (tallied[other][0], 2)}  # refusals only
    assert remaining(store, other, [PER_CUSTOMER]) == [2]
    # The decision log says deny for every audited limit of the refused batches, on each customer's stream.
    kinds = Counter((entry.customer, entry.kind) for entries in redis_log(store._client, store.key_prefix).values()
                    for entry in entries)  # fmt: skip
    assert kinds == {(full, "allow"): 3, (full, "deny"): 2, (other, "allow"): 1, (other, "deny"): 2}


REFUNDED = [name for name, entry in REGISTRY.items() if entry.refund]


@pytest.mark.parametrize("algorithm", REFUNDED)
def test_a_refused_batch_gives_back_what_two_items_spent_on_one_counter(store: Any, algorithm: str) -> None:
    """Two items of the first slot spend on one counter, the second slot refuses: both are given back (one
    refund.lua call refunds that counter twice), so the next checks see what they would have without the batch."""
    if algorithm == "calendar":
        spec = LimitSpec("l", algorithm, 6, calendar_period="day", key_by=("customer",))
    else:
        spec = LimitSpec("l", algorithm, 6, period_s=60, key_by=("customer",))
    first, second = sorted(two_slots(store), key=lambda customer: slot_of(f"{{c={customer}}}"))
    for _ in range(6):
        store.check(CheckItem(second, "Op"), [spec])
    before = remaining(store, first, [spec])
    pairs = [(CheckItem(customer, "Op", costs={"requests": 2}), [spec]) for customer in (first, first, second)]

    assert [decision.allowed for decision in store.check_batch(pairs, "atomic")] == [False] * 3

    assert remaining(store, first, [spec]) == before
    assert [store.check(CheckItem(first, "Op", costs={"requests": 2}), [spec]).allowed for _ in range(4)] == [
        True, True, True, False
    ]  # fmt: skip


def test_both_customers_under_their_limits_spend_on_both_slots(store: Any) -> None:
    first, second = two_slots(store)
    pairs = [(CheckItem(customer, "Op", costs={"requests": 2}), [PER_CUSTOMER]) for customer in (first, second)]

    decisions = store.check_batch(pairs, "atomic")

    assert [decision.allowed for decision in decisions] == [True, True]
    assert [decision.limits[0].remaining for decision in decisions] == [1, 1]
    assert all(decision.decided_at_ms == NOW for decision in decisions)
    assert remaining(store, first, [PER_CUSTOMER]) == remaining(store, second, [PER_CUSTOMER]) == [1]
    assert usage(store) == {first: (1, 0), second: (1, 0)}
    # A second such batch would pass one slot and not the other: refused whole, nothing spent.
    assert [decision.allowed for decision in store.check_batch(pairs, "atomic")] == [False, False]
    assert remaining(store, first, [PER_CUSTOMER]) == remaining(store, second, [PER_CUSTOMER]) == [1]


def test_an_item_over_three_slots_in_an_atomic_batch_is_refunded_everywhere(store: Any) -> None:
    first, second = two_slots(store)
    for _ in range(3):
        store.check(CheckItem(second, "Op"), [PER_CUSTOMER])
    pairs = [(CheckItem(customer, "Op"), [PER_CUSTOMER, GLOBAL]) for customer in (first, second)]

    decisions = store.check_batch(pairs, "atomic")

    assert [decision.allowed for decision in decisions] == [False, False]
    assert remaining(store, first, [PER_CUSTOMER, GLOBAL]) == [3, 10]  # the customer's and the global slot
    del pairs[1]
    assert [decision.allowed for decision in store.check_batch(pairs * 2, "atomic")] == [True, True]
    assert remaining(store, first, [PER_CUSTOMER, GLOBAL]) == [1, 8]


def test_request_ids_are_replayed_and_a_reused_one_writes_nothing(store: Any) -> None:
    first, second = two_slots(store)
    pairs = [(CheckItem(customer, "Op", request_id="r1"), [PER_CUSTOMER]) for customer in (first, second)]

    decided = store.check_batch(pairs, "atomic")
    replayed = store.check_batch(pairs, "atomic")

    assert [decision.allowed for decision in decided] == [True, True]
    assert [decision.replayed for decision in replayed] == [True, True]
    assert [decision.limits for decision in replayed] == [decision.limits for decision in decided]
    assert remaining(store, first, [PER_CUSTOMER]) == remaining(store, second, [PER_CUSTOMER]) == [2]
    before = (state(store, first), state(store, second))
    reused = [(CheckItem(first, "Op", request_id="r2"), [PER_CUSTOMER]),
              (CheckItem(second, "Op", request_id="r1", costs={"requests": 2}), [PER_CUSTOMER])]  # fmt: skip
    with pytest.raises(IdempotencyKeyReused) as error:
        store.check_batch(reused, "atomic")
    assert error.value.indexes == (1,)
    assert (state(store, first), state(store, second)) == before
    assert store.check_batch(reused[:1], "atomic")[0].allowed  # r2 was never stored
    assert usage(store) == {first: (2, 0), second: (1, 0)}


@pytest.mark.race
def test_overlapping_atomic_batches_from_many_threads_never_admit_past_a_limit(
    cluster_client: Any, cluster_prefix: str
) -> None:
    quantity, customers, threads, batches = 20, [f"acct-{n}" for n in range(6)], 8, 25
    spec = LimitSpec("per-customer", "fixed_window", quantity, period_s=60, key_by=("customer",))
    shared = LimitSpec("shared", "fixed_window", 60, period_s=60, key_by=())  # a slot every batch also reserves on
    store = ClusterStore(cluster_client, cluster_prefix, clock=ManualClock(NOW))
    assert len({slot_of(f"{{c={customer}}}") for customer in customers}) == len(customers)
    start = threading.Barrier(threads)
    decided: list[tuple[list[CheckItem], list[Any]]] = []
    lock = threading.Lock()

    def work(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(batches):
            chosen = rng.sample(customers, rng.randint(2, 3))
            items = [CheckItem(customer, "Op", costs={"requests": rng.randint(1, 3)}) for customer in chosen]
            decisions = store.check_batch([(item, [spec, shared]) for item in items], "atomic")
            with lock:
                decided.append((items, decisions))

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert len(decided) == threads * batches
    spent: Counter[str] = Counter()
    for items, decisions in decided:
        assert len({decision.allowed for decision in decisions}) == 1  # all or nothing
        for item, decision in zip(items, decisions, strict=True):
            tallied = decision_usage(item, [spec, shared], decision, decision.decided_at_ms)
            assert tallied is not None
            if tallied[0]:
                spent[item.customer] += dict(tallied[3])["requests"]
    assert 0 < sum(decision[0].allowed for _, decision in decided) < len(decided)  # contended, both outcomes
    assert all(amount <= quantity for amount in spent.values())
    assert sum(spent.values()) <= 60
    # Every counter holds exactly what the admitted batches spent: the refunds gave back every reservation.
    for customer in customers:
        assert remaining(store, customer, [spec]) == [quantity - spent[customer]]
    assert remaining(store, customers[0], [shared]) == [60 - sum(spent.values())]
