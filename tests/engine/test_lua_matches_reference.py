"""Property tests: for random sequences of time steps, costs, batches and limit changes, the Redis
script decides exactly what the reference models decide (MemoryStore), for every algorithm.

Exact equality holds for every algorithm, including the sliding window counter: its weight is
computed with the same IEEE double operations in Python and Lua. Every run's admissions are also
checked against the algorithm's invariant (tests/engine/invariants.py).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from apps.engine import CheckItem, Decision, IdempotencyKeyReused, LimitSpec, ManualClock, MemoryStore
from apps.engine.decision_log import LogEntry
from apps.engine.store.redis import RedisStore
from apps.engine.types import SessionTimeSpent
from tests.engine import invariants
from tests.engine.invariants import Admitted
from tests.engine.test_decision_log_store import redis_log
from tests.engine.usage_book import Tallied

HOUR = 3_600_000
T = TypeVar("T")
LEASED = ("concurrency", "session_time")
# session_time runs: the slot every lease takes, with the session_time limit checked in the same step.
SLOTS = LimitSpec("slots", "concurrency", 3, key_by=("customer",))
STARTS = [
    1_705_276_800_000,  # 2024-01-15T00:00Z
    1_711_827_000_000,  # 2024-03-30T19:30Z, hours before Europe/Berlin springs forward
    1_729_969_200_000,  # 2024-10-26T19:00Z, hours before Europe/Berlin falls back
    1_706_733_000_000,  # 2024-01-31T20:30Z, month end in America/New_York
]
# How long a check accepts to wait on a leaky bucket (a shaper); other algorithms ignore it.
WAITS = st.sampled_from([0, 0, 1, 500, 2_000, 10_000, 60_000])
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
SETTINGS = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def answer(call: Callable[[], T]) -> T | tuple[str, tuple[int, ...]]:
    """What a store answers: its result, or the items it refused as reusing a request id (both stores
    must refuse alike, before anything moves)."""
    try:
        return call()
    except IdempotencyKeyReused as reused:
        return ("reused", reused.indexes)
    except SessionTimeSpent as spent:
        return ("spent", (-1 if spent.retry_after_ms is None else spent.retry_after_ms,))


def limit_strategy(algorithm: str) -> st.SearchStrategy[LimitSpec]:
    """Small limits, so random traffic hits every edge (full, empty, rolled over, never). Limits of a minute
    or longer are durable, so both stores record what they spend alike (90 s windows straddle minutes)."""
    common: dict[str, Any] = {
        "name": st.just("lim"),
        "algorithm": st.just(algorithm),
        "key_by": st.just(("customer",)),
        "audit": st.booleans(),
    }
    period = st.integers(1, 5) | st.sampled_from([60, 90])
    if algorithm == "calendar":
        spec = st.builds(
            LimitSpec, quantity=st.integers(0, 8), calendar_period=st.sampled_from(["day", "week", "month"]), **common
        )
    elif algorithm == "concurrency":
        spec = st.builds(LimitSpec, quantity=st.integers(0, 4), **common)
    elif algorithm in ("token_bucket", "leaky_bucket", "gcra"):
        burst = st.none() | st.integers(1, 8)
        spec = st.builds(LimitSpec, quantity=st.integers(1, 5), period_s=period, burst=burst, **common)
    else:
        spec = st.builds(LimitSpec, quantity=st.integers(0, 8), period_s=period, **common)
    return spec.map(lambda drawn: replace(drawn, durable=drawn.can_be_durable))


def step_strategy(spec: LimitSpec) -> st.SearchStrategy[int]:
    if spec.algorithm == "calendar":
        return st.sampled_from([0, 1, 60_000, HOUR, 5 * HOUR, 23 * HOUR, 24 * HOUR, 7 * 24 * HOUR])
    period = spec.period_ms or 10_000
    if spec.algorithm == "session_time":  # mostly whole seconds, so the time held meets the limit exactly
        return st.sampled_from([0, 500, 1_000, 1_000, 2_000, period]) | st.integers(0, 1_500)
    return st.integers(0, 300) | st.integers(0, period + period // 2) | st.sampled_from([period, 2 * period, 1])


class EngineComparison(RuleBasedStateMachine):
    """Drives a RedisStore and a MemoryStore with the same clock steps and checks; compares every answer."""

    client: redis.Redis
    prefix: str
    algorithm: str
    store_class: type[RedisStore] = RedisStore
    counter = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        self.redis_clock = self.memory_clock = ManualClock(0)
        self.admitted: dict[str, list[Admitted]] = defaultdict(list)
        self.earlier: list[list[Admitted]] = []  # a leaky bucket's departures under earlier configurations
        self.leases: list[tuple[str | None, str | None]] = []
        self.spans: list[tuple[str, list[int]]] = []
        self.quantities: list[int] = []
        self.capacities: list[int] = []
        self.resynced = False  # a resync adds or drops holdings the spans below do not track
        # Allocations by index in self.leases and customer; a resync that drops allocations may drop any of a
        # customer's (each store picks by member, and members are random): those are no longer renewed or released.
        self.allocations: dict[int, str] = {}
        self.forgotten: set[int] = set()

    @initialize(data=st.data(), start=st.sampled_from(STARTS), zone=st.sampled_from(ZONES))
    def set_up(self, data: st.DataObject, start: int, zone: str) -> None:
        self.spec = data.draw(limit_strategy(self.algorithm))
        self.zone = zone
        self.redis_clock, self.memory_clock = ManualClock(start), ManualClock(start)
        prefix = f"{self.prefix}:{next(self.counter)}"
        self.redis = Tallied(self.store_class(self.client, prefix, clock=self.redis_clock, instance="node"))
        self.memory = Tallied(MemoryStore(prefix, clock=self.memory_clock, instance="node"))
        self._note_limit()

    def _note_limit(self) -> None:
        self.quantities.append(self.spec.quantity)
        self.capacities.append(self.spec.capacity)

    def item(
        self, customer: str, cost: int, dry_run: bool = False, request_id: str | None = None, max_wait: int = 0
    ) -> CheckItem:
        return CheckItem(
            customer,
            "Op",
            costs={"requests": cost},
            dry_run=dry_run,
            request_id=request_id,
            timezone=self.zone,
            max_wait_ms=max_wait,
        )

    def record(self, item: CheckItem, decision: Decision) -> None:
        """An admission counts when it proceeds: after its delay (a shaper's queue), so a leaky bucket's
        departures are what must keep to its rate and burst."""
        if decision.allowed and not decision.replayed and not item.dry_run and self.algorithm not in LEASED:
            departs = self.memory_clock.now_ms() + decision.delay_ms
            self.admitted[item.customer].append(Admitted(departs, item.cost_of("requests")))

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        step = data.draw(step_strategy(self.spec))
        self.redis_clock.advance(step)
        self.memory_clock.advance(step)

    @rule(
        customer=st.sampled_from(["a", "b"]),
        cost=st.integers(0, 10),
        dry_run=st.booleans(),
        request_id=st.none() | st.sampled_from(["r1", "r2"]),
        max_wait=WAITS,
    )
    def check(self, customer: str, cost: int, dry_run: bool, request_id: str | None, max_wait: int) -> None:
        item = self.item(customer, cost, dry_run, request_id, max_wait)
        expected = answer(lambda: self.memory.check(item, [self.spec]))
        assert answer(lambda: self.redis.check(item, [self.spec])) == expected
        if isinstance(expected, Decision):
            self.record(item, expected)

    @rule(
        items=st.lists(
            st.tuples(
                st.sampled_from(["a", "b"]),
                st.integers(0, 6),
                st.booleans(),
                st.none() | st.sampled_from(["r1", "r3"]),
                WAITS,
            ),
            min_size=1,
            max_size=6,
        ),
        mode=st.sampled_from(["independent", "atomic"]),
    )
    def batch(self, items: list[tuple[str, int, bool, str | None, int]], mode: str) -> None:
        # On Redis Cluster customers "a" and "b" live on different slots: an atomic batch naming both is reserved
        # slot by slot (store/atomic_slots.py), and must answer, spend and log as on one Redis.
        checks = [
            self.item(customer, cost, dry_run and cost % 2 == 0, request_id, max_wait)
            for customer, cost, dry_run, request_id, max_wait in items
        ]
        pairs = [(item, [self.spec]) for item in checks]
        expected = answer(lambda: self.memory.check_batch(pairs, mode))  # type: ignore[arg-type]
        assert answer(lambda: self.redis.check_batch(pairs, mode)) == expected  # type: ignore[arg-type]
        if isinstance(expected, list):
            for item, decision in zip(checks, expected, strict=True):
                self.record(item, decision)

    @rule(quantity=st.integers(0, 8), burst=st.none() | st.integers(1, 8))
    def change_limit(self, quantity: int, burst: int | None) -> None:
        if self.algorithm in ("token_bucket", "leaky_bucket", "gcra"):
            self.spec = replace(self.spec, quantity=max(1, quantity), burst=burst)
            if self.algorithm in ("leaky_bucket", "gcra"):
                # A shaper's departures already promised keep the times the old rate gave them; the new rate
                # spaces the checks made after the change. GCRA keeps its theoretical arrival time in time, as
                # redis-cell does: what is owed is re-read at the new rate (a slower one owes fewer units). Each
                # configuration's admissions keep its bound.
                self.earlier.extend(self.admitted.values())
                self.admitted = defaultdict(list)
        else:
            self.spec = replace(self.spec, quantity=quantity)
        self._note_limit()

    @rule(customer=st.sampled_from(["a", "b"]), ttl_s=st.none() | st.integers(1, 20))
    def acquire(self, customer: str, ttl_s: int | None) -> None:
        if self.algorithm not in LEASED:
            return
        if self.algorithm == "session_time" and ttl_s is None:
            ttl_s = 1  # an allocation (held until released) counts no session time: refused before anything moves
        item = self.item(customer, 1)
        slot, others = (self.spec, []) if self.algorithm == "concurrency" else (SLOTS, [self.spec])
        expected = self.memory.lease_acquire(item, slot, ttl_s, others)
        got = self.redis.lease_acquire(item, slot, ttl_s, others)
        assert (got[0], got[1] is None, got[2]) == (expected[0], expected[1] is None, expected[2])
        if expected[1] is not None:
            self.session_time_was_left(customer)
            if ttl_s is None:
                self.allocations[len(self.leases)] = customer
            self.leases.append((got[1], expected[1]))
            self.spans.append((customer, [self.memory_clock.now_ms(), expected[2]]))

    @rule(data=st.data(), ttl_s=st.integers(1, 20), release=st.booleans())
    def renew_or_release(self, data: st.DataObject, ttl_s: int, release: bool) -> None:
        if not self.leases:
            return
        index = data.draw(st.integers(0, len(self.leases) - 1))
        if index in self.forgotten:
            return
        redis_id, memory_id = self.leases[index]
        assert redis_id is not None
        assert memory_id is not None
        now = self.memory_clock.now_ms()
        if release:
            self.redis.lease_release(redis_id)
            self.memory.lease_release(memory_id)
            self.spans[index][1][1] = min(self.spans[index][1][1], now)
            return
        expected = answer(lambda: self.memory.lease_renew(memory_id, ttl_s))
        assert answer(lambda: self.redis.lease_renew(redis_id, ttl_s)) == expected
        if isinstance(expected, int):
            self.session_time_was_left(self.spans[index][0])
            self.spans[index][1][1] = expected

    @rule(customer=st.sampled_from(["a", "b"]), held=st.integers(0, 5))
    def resync_allocations(self, customer: str, held: int) -> None:
        """The service's own count of live objects sets the allocations held (placeholders added or dropped)."""
        if self.algorithm != "concurrency":
            return
        item = self.item(customer, 1)
        expected = self.memory.allocations_set(item, self.spec, held)
        resynced = self.redis.allocations_set(item, self.spec, held)
        before = resynced.before
        assert (before, resynced.counter, len(resynced.members)) == (
            expected.before,
            expected.counter,
            len(expected.members),
        )
        self.resynced = True
        if held < before:
            self.forgotten |= {index for index, owner in self.allocations.items() if owner == customer}

    def session_time_was_left(self, customer: str) -> None:
        """A lease granted or renewed now: the customer's sessions held less than the window's time so far."""
        if self.algorithm != "session_time":
            return
        now, period = self.memory_clock.now_ms(), self.spec.period_ms
        start = now - now % period
        held = sum(max(0, min(end, now) - max(begun, start)) for owner, (begun, end) in self.spans if owner == customer)
        assert held < max(self.quantities) * 1000

    def teardown(self) -> None:
        if hasattr(self, "redis"):
            assert_same_log(self.client, self.redis, self.memory)
        if hasattr(self, "redis") and self.algorithm in LEASED:  # session time in usage, minute by minute
            minutes = self.memory.usage_minutes()
            assert self.redis.usage_minutes() == minutes
            for minute in minutes:
                assert self.redis.usage_rows(minute) == self.memory.usage_rows(minute)

    @invariant()
    def admissions_respect_the_algorithm(self) -> None:
        if not self.quantities:
            return
        quantity, capacity = max(self.quantities), max(self.capacities)
        for events in (*self.earlier, *self.admitted.values()):
            check_log(self.spec, events, quantity, capacity, self.zone)
        slots = SLOTS.quantity if self.algorithm == "session_time" else quantity
        for customer in ("a", "b") if not self.resynced else ():
            spans = [(start, end) for owner, (start, end) in self.spans if owner == customer]
            invariants.assert_concurrency(spans, slots)


def assert_same_log(client: Any, redis_store: RedisStore, memory: MemoryStore) -> None:
    """Both stores logged the same entries in each stream (ids aside). Expiries are left out: MemoryStore drops
    a concurrency set once its last lease expired, Redis keeps it for its TTL's slack, so they notice different
    expired leases; tests/engine/test_decision_log_store.py checks them on a set both keep."""

    def kept(entries: list[LogEntry]) -> list[LogEntry]:
        """Without ids and expiries; lease members (random in each store) named by order of appearance."""
        names: dict[str, str] = {}
        return [
            replace(entry.without_id(), lease=names.setdefault(entry.lease, f"L{len(names)}") if entry.lease else "")
            for entry in entries
            if entry.kind != "expire"
        ]

    written = {stream: kept(entries) for stream, entries in redis_log(client, redis_store.key_prefix).items()}
    expected = {stream: kept(entries) for stream, entries in memory.log_streams().items()}
    assert {stream: entries for stream, entries in written.items() if entries} == {
        stream: entries for stream, entries in expected.items() if entries
    }


def check_log(spec: LimitSpec, events: list[Admitted], quantity: int, capacity: int, zone: str) -> None:
    """The invariant of spec's algorithm, with the largest quantity/capacity the run ever used."""
    if spec.algorithm == "fixed_window":
        invariants.assert_fixed_windows(events, spec.period_ms, quantity)
    elif spec.algorithm in ("sliding_window", "sliding_log"):
        # Both bound every fixed window; the log also bounds every sliding interval.
        invariants.assert_fixed_windows(events, spec.period_ms, quantity)
        if spec.algorithm == "sliding_log":
            invariants.assert_sliding(events, spec.period_ms, quantity)
    elif spec.algorithm == "calendar":
        invariants.assert_calendar_windows(events, zone, spec.calendar_period or "day", quantity)
    elif spec.algorithm in ("token_bucket", "leaky_bucket", "gcra"):
        invariants.assert_bucket(events, quantity, spec.period_ms, capacity)


ALGORITHMS = [
    "fixed_window",
    "calendar",
    "sliding_window",
    "sliding_log",
    "token_bucket",
    "leaky_bucket",
    "concurrency",
    "session_time",
    "gcra",
]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_redis_decides_like_the_reference_model(algorithm: str, redis_client: redis.Redis, key_prefix: str) -> None:
    machine = type(
        f"Compare_{algorithm}",
        (EngineComparison,),
        {"client": redis_client, "prefix": key_prefix, "algorithm": algorithm},
    )
    run_state_machine_as_test(machine, settings=SETTINGS)


class MixedComparison(RuleBasedStateMachine):
    """Checks of three limits of random algorithms, units and shadow modes at once; all-or-nothing included."""

    client: redis.Redis
    prefix: str
    counter = itertools.count()

    @initialize(data=st.data(), start=st.sampled_from(STARTS), zone=st.sampled_from(ZONES))
    def set_up(self, data: st.DataObject, start: int, zone: str) -> None:
        algorithms = data.draw(st.lists(st.sampled_from(ALGORITHMS), min_size=1, max_size=3))
        self.specs = [
            replace(
                data.draw(limit_strategy(algorithm)),
                name=f"l{number}",
                unit=data.draw(st.sampled_from(["requests", "records"])),
                shadow=data.draw(st.sampled_from([False, False, True])),
            )
            for number, algorithm in enumerate(algorithms)
        ]
        self.zone = zone
        self.redis_clock, self.memory_clock = ManualClock(start), ManualClock(start)
        prefix = f"{self.prefix}:mixed:{next(self.counter)}"
        self.redis = Tallied(RedisStore(self.client, prefix, clock=self.redis_clock, instance="node"))
        self.memory = Tallied(MemoryStore(prefix, clock=self.memory_clock, instance="node"))

    @rule(step=st.integers(0, 2_000) | st.sampled_from([60_000, HOUR, 24 * HOUR]))
    def advance(self, step: int) -> None:
        self.redis_clock.advance(step)
        self.memory_clock.advance(step)

    def item(self, customer: str, requests: int, records: int, **extra: Any) -> CheckItem:
        costs = {"requests": requests, "records": records}
        return CheckItem(customer, "PutRecords", costs=costs, timezone=self.zone, **extra)

    @rule(
        customer=st.sampled_from(["a", "b"]),
        requests=st.integers(0, 3),
        records=st.integers(0, 9),
        request_id=st.none() | st.sampled_from(["r1", "r2"]),
        max_wait=WAITS,
    )
    def check(self, customer: str, requests: int, records: int, request_id: str | None, max_wait: int) -> None:
        item = self.item(customer, requests, records, request_id=request_id, max_wait_ms=max_wait)
        assert answer(lambda: self.redis.check(item, self.specs)) == answer(lambda: self.memory.check(item, self.specs))

    @rule(
        items=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.integers(0, 6), WAITS), max_size=5),
        mode=st.sampled_from(["independent", "atomic"]),
    )
    def batch(self, items: list[tuple[str, int, int, int]], mode: str) -> None:
        pairs = [(self.item(c, r, n, max_wait_ms=w), self.specs) for c, r, n, w in items]
        assert self.redis.check_batch(pairs, mode) == self.memory.check_batch(pairs, mode)  # type: ignore[arg-type]

    @rule(data=st.data(), quantity=st.integers(1, 8))
    def change_limit(self, data: st.DataObject, quantity: int) -> None:
        index = data.draw(st.integers(0, len(self.specs) - 1))
        self.specs[index] = replace(self.specs[index], quantity=quantity)

    def teardown(self) -> None:
        if hasattr(self, "redis"):  # usage is counted alike, minute by minute, and so is the log
            assert_same_log(self.client, self.redis, self.memory)
            minutes = self.memory.usage_minutes()
            assert self.redis.usage_minutes() == minutes
            for minute in minutes:
                assert self.redis.usage_rows(minute) == self.memory.usage_rows(minute)


def test_redis_decides_multi_limit_checks_like_the_reference(redis_client: redis.Redis, key_prefix: str) -> None:
    machine = type("CompareMixed", (MixedComparison,), {"client": redis_client, "prefix": key_prefix})
    run_state_machine_as_test(machine, settings=SETTINGS)
