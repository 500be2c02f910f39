"""Durable counters (durability.py): what checks spend is recorded with their usage, and a counter lost with
its store is rebuilt from those records the first time it is needed, for every algorithm and every key."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
import redis

from apps.engine import CheckItem, InvalidCheck, KeyLayout, LimitSpec, ManualClock, MemoryStore
from apps.engine.durability import History
from apps.engine.store.redis import RedisStore
from apps.engine.types import SeedRequest
from tests.engine.conftest import START_MS
from tests.engine.test_round_trips import seen_by_redis, sent
from tests.engine.usage_book import Tallied

HOUR_MS = 3_600_000
QUANTITY = 10
SPENT = 6
DAILY = LimitSpec("daily", "calendar", QUANTITY, calendar_period="day", key_by=("customer",), durable=True)
CHECK = CheckItem("acct-1", "ModifyShardCount", resource="stream-1", ip="203.0.113.7", attributes={"Kind": "x"})
DURABLE = {
    "fixed_window": dict(period_s=3600),
    "calendar": dict(calendar_period="day"),
    "sliding_window": dict(period_s=3600),
    "sliding_log": dict(period_s=3600),
    "token_bucket": dict(period_s=3600),
    "leaky_bucket": dict(period_s=3600),
    "gcra": dict(period_s=3600),
}
SCOPES = [("customer",), ("customer", "resource"), ("customer", "attr:Kind"), ("ip",), ()]


class Records:
    """What the platform's flush and seeder do together: keeps the records of collected usage, answers seeds."""

    def __init__(self) -> None:
        self.amounts: dict[tuple[str, int], int] = defaultdict(int)
        self.asked: list[SeedRequest] = []

    def collect(self, store: RedisStore | MemoryStore) -> None:
        for minute in store.usage_minutes():
            for row in store.usage_rows(minute):
                for (counter, start), amount in row.records.items():
                    self.amounts[(counter, start)] += amount
            store.usage_discard(minute)

    def __call__(self, requests: Sequence[SeedRequest]) -> list[History]:
        self.asked += requests
        return [
            [(start, amount) for (counter, start), amount in self.amounts.items() if counter == request.counter]
            for request in requests
        ]


@pytest.fixture
def records() -> Records:
    return Records()


@pytest.fixture
def midday() -> ManualClock:
    return ManualClock(START_MS + 12 * HOUR_MS + 30 * 60_000)


@pytest.fixture(params=["redis", "memory"])
def stores(request, redis_client, key_prefix, midday, records) -> Callable[[], RedisStore | MemoryStore]:
    """A store with the records as its seeder; called again, the same store after losing its data."""
    if request.param == "memory":
        return lambda: Tallied(MemoryStore(key_prefix, clock=midday, seeder=records))

    def redis_store() -> RedisStore:
        keys = list(redis_client.scan_iter(match=f"{key_prefix}:c:*", count=1000))
        keys += list(redis_client.scan_iter(match=f"{key_prefix}:epoch", count=10))
        if keys:
            redis_client.delete(*keys)  # a restart without persistence: counters and the epoch are gone
        return Tallied(RedisStore(redis_client, key_prefix, clock=midday, seeder=records))

    return redis_store


def admitted_until_refused(store: RedisStore | MemoryStore, spec: LimitSpec, item: CheckItem = CHECK) -> int:
    count = 0
    while store.check(item, [spec]).allowed:
        count += 1
        assert count <= QUANTITY, "admitted more than the limit"
    return count


@pytest.mark.parametrize("scope", SCOPES, ids=lambda scope: "+".join(scope) or "global")
@pytest.mark.parametrize("algorithm", list(DURABLE))
def test_a_lost_counter_admits_exactly_what_its_records_leave(stores, records, midday, algorithm, scope) -> None:
    spec = LimitSpec("lim", algorithm, QUANTITY, key_by=scope, durable=True, **DURABLE[algorithm])  # type: ignore[arg-type]
    store = stores()
    for _ in range(SPENT):
        assert store.check(CHECK, [spec]).allowed
        midday.advance(1000)
    records.collect(store)
    records.asked.clear()  # a new store asks once for every durable counter it meets (its epoch is new)

    after_loss = stores()

    assert admitted_until_refused(after_loss, spec) == QUANTITY - SPENT
    assert len(records.asked) == 1


def test_a_rebuilt_counter_is_written_back_and_not_asked_for_again(stores, records) -> None:
    store = stores()
    store.check(CHECK, [DAILY])
    records.collect(store)
    records.asked.clear()
    store = stores()

    assert store.check(CHECK, [DAILY]).limits[0].remaining == QUANTITY - 2
    assert store.check(CHECK, [DAILY]).limits[0].remaining == QUANTITY - 3
    assert [(r.spec.name, r.counter, r.since_ms) for r in records.asked] == [
        ("daily", "c:{c=acct-1}:cal:daily:c=acct-1", START_MS)
    ]


def test_a_window_that_opens_after_the_epoch_is_never_rebuilt(stores, records, midday) -> None:
    store = stores()
    store.check(CHECK, [DAILY])
    records.asked.clear()
    midday.advance(24 * HOUR_MS)

    assert store.check(CHECK, [DAILY]).limits[0].remaining == QUANTITY - 1
    assert records.asked == []


def test_records_past_the_look_back_do_not_count(stores, records, midday) -> None:
    hourly = LimitSpec("hourly", "sliding_log", QUANTITY, period_s=3600, durable=True)
    store = stores()
    for _ in range(SPENT):
        store.check(CHECK, [hourly])
    records.collect(store)
    midday.advance(HOUR_MS + 60_000)  # every record's minute is out of the hour now

    assert admitted_until_refused(stores(), hourly) == QUANTITY


def test_each_missing_counter_of_a_batch_is_rebuilt_from_its_own_records(stores, records) -> None:
    store = stores()
    store.check_batch([(CheckItem(customer, "Op"), [DAILY]) for customer in ("acct-1", "acct-1", "acct-2")])
    records.collect(store)
    records.asked.clear()
    store = stores()

    decisions = store.check_batch([(CheckItem(customer, "Op"), [DAILY]) for customer in ("acct-1", "acct-2")])

    assert [d.limits[0].remaining for d in decisions] == [QUANTITY - 3, QUANTITY - 2]
    assert sorted(r.item.customer for r in records.asked) == ["acct-1", "acct-2"]


def test_limits_that_are_not_durable_record_nothing_and_are_never_asked(stores, records) -> None:
    plain = replace(DAILY, durable=False)
    store = stores()
    store.check(CHECK, [plain])
    records.collect(store)

    assert records.amounts == {}
    assert stores().check(CHECK, [plain]).limits[0].remaining == QUANTITY - 1
    assert records.asked == []


def test_without_a_seeder_a_lost_counter_starts_empty(redis_client, key_prefix, midday) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix, clock=midday))
    assert store.check(CHECK, [DAILY]).limits[0].remaining == QUANTITY - 1


@pytest.mark.parametrize(
    "spec",
    [
        dict(algorithm="fixed_window", period_s=59),
        dict(algorithm="token_bucket", period_s=30),
        dict(algorithm="concurrency"),
    ],
)
def test_only_calendars_and_windows_logs_and_buckets_of_a_minute_or_longer_are_durable(spec) -> None:
    with pytest.raises(InvalidCheck, match="durable"):
        LimitSpec("x", quantity=10, durable=True, **spec)


def test_rebuilding_costs_two_more_round_trips_once_and_none_after(redis_url, key_prefix, midday, records) -> None:
    """Before the warm-up marks the epoch (counters/warm_up.py), a lost counter's first check is its shape's call
    handing over, check.lua asking for its seed, and check.lua with it; every later check is one call."""
    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    store = Tallied(RedisStore(client, key_prefix, clock=midday, seeder=records))
    store.load_scripts()
    store.check(replace(CHECK, customer="another"), [DAILY])  # loads the shape's library (and sets the epoch)
    try:
        # The shape's Function hands over; check.lua (a script) asks for the seed, then decides with it.
        handed_over = ["FCALL", "EVALSHA", "EVALSHA"]
        assert sent(seen_by_redis(redis_url, client, lambda: store.check(CHECK, [DAILY]))) == handed_over
        assert sent(seen_by_redis(redis_url, client, lambda: store.check(CHECK, [DAILY]))) == ["FCALL"]
    finally:
        client.close()


def written(store: RedisStore | MemoryStore) -> list[str]:
    """Every key the store holds under its prefix (Redis: counters, epoch, usage, ids; memory: counters)."""
    return store.counter_keys(store.key_prefix)


@pytest.mark.parametrize("algorithm", list(DURABLE))
def test_a_dry_run_answers_from_a_lost_counters_records_and_writes_nothing(stores, records, midday, algorithm) -> None:
    spec = LimitSpec("lim", algorithm, QUANTITY, key_by=("customer",), durable=True, **DURABLE[algorithm])  # type: ignore[arg-type]
    store = stores()
    for _ in range(SPENT):
        store.check(CHECK, [spec])
    records.collect(store)
    after_loss = stores()
    before = written(after_loss)

    dry = after_loss.check(replace(CHECK, dry_run=True), [spec])

    assert written(after_loss) == before  # no seed, no epoch
    real = after_loss.check(CHECK, [spec])
    assert (dry.allowed, real.allowed) == (True, True)
    assert dry.limits[0].remaining == real.limits[0].remaining + 1 == QUANTITY - SPENT
    assert admitted_until_refused(after_loss, spec) == QUANTITY - SPENT - 1


def test_a_batch_writes_the_seeds_of_the_counters_its_real_checks_name_only(stores, records) -> None:
    store = stores()
    store.check_batch([(CheckItem(customer, "Op"), [DAILY]) for customer in ("acct-1", "acct-2")])
    records.collect(store)
    store = stores()

    store.check_batch([(CheckItem("acct-1", "Op", dry_run=True), [DAILY]), (CheckItem("acct-2", "Op"), [DAILY])])

    layout = KeyLayout(store.key_prefix)
    assert store.counter_keys(layout.customer_counters_head("acct-1")) == []
    assert store.counter_keys(layout.customer_counters_head("acct-2")) != []
    assert store.check(CheckItem("acct-1", "Op"), [DAILY]).limits[0].remaining == QUANTITY - 2
