"""The decision and session log as the stores write it (issue 17): audited decisions and every lease event, in
the same call, in the stream of the counter's hash tag; usage's `logged` counts the decisions written."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.decision_log import LogEntry, log_key_of, log_match, parse_entry
from apps.engine.store.redis import RedisStore
from tests.engine.conftest import START_MS
from tests.engine.usage_book import Tallied

AUDITED = LimitSpec("per-minute", "fixed_window", 2, period_s=60, key_by=("customer",), audit=True)
QUIET = LimitSpec("per-hour", "sliding_log", 100, period_s=3600, key_by=("customer",))
BUCKET = LimitSpec("burst", "token_bucket", 5, period_s=10, burst=7, key_by=("customer",), shadow=True, audit=True)
SLOTS = LimitSpec("slots", "concurrency", 1, key_by=("customer",))
INSTANCE = "node-1:42"

Store = RedisStore | MemoryStore


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def redis_log(client: redis.Redis, prefix: str) -> dict[str, list[LogEntry]]:
    """Every log stream under `prefix`, parsed (what the drain reads)."""
    streams = sorted(text(key) for key in client.scan_iter(match=log_match(prefix), count=1000))
    return {
        stream: [
            parse_entry(text(entry_id), {text(k): text(v) for k, v in fields.items()})
            for entry_id, fields in client.xrange(stream)
        ]
        for stream in streams
    }


def entries(store: Store) -> list[LogEntry]:
    """The store's log entries, each stream in order, without their ids."""
    streams = (
        store.log_streams() if isinstance(store.store, MemoryStore) else redis_log(store._client, store.key_prefix)
    )
    return [entry.without_id() for stream in streams.values() for entry in stream]


@pytest.fixture(params=["redis", "memory"])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Store:
    if request.param == "memory":
        return Tallied(MemoryStore("mem", clock=clock, instance=INSTANCE))
    client, prefix = request.getfixturevalue("redis_client"), request.getfixturevalue("key_prefix")
    return Tallied(RedisStore(client, prefix, clock=clock, instance=INSTANCE))


def logged_in_usage(store: Store) -> int:
    return sum(row.logged for minute in store.usage_minutes() for row in store.usage_rows(minute))


def test_an_audited_limit_logs_its_allows_and_denies_with_every_field(store: Store, clock: ManualClock) -> None:
    clock.advance(1_500)
    item = CheckItem("acme", "Search", costs={"requests": 1})
    decisions = [store.check(item, [AUDITED, QUIET]).allowed for _ in range(3)]
    assert decisions == [True, True, False]
    key = f"{store.key_prefix}:c:{{c=acme}}:fw:per-minute:c=acme"
    allow = LogEntry(
        "", START_MS + 1_500, "allow", "acme", "Search", "per-minute", "fixed_window", key, 1, 2, 60_000, 0,
        START_MS, False, "exact", INSTANCE,
    )  # fmt: skip
    deny = LogEntry(**{**{name: getattr(allow, name) for name in LogEntry.__slots__}, "kind": "deny"})
    assert entries(store) == [allow, allow, deny]
    assert logged_in_usage(store) == 3


def test_a_refused_item_logs_deny_on_every_audited_limit_and_buckets_log_their_burst(store: Store) -> None:
    refused = CheckItem("acme", "Put", costs={"requests": 3})  # over AUDITED (2): BUCKET, shadow, spends nothing
    assert not store.check(refused, [BUCKET, AUDITED]).allowed
    logged = entries(store)
    assert [(e.kind, e.limit, e.cost, e.quantity, e.burst, e.period_ms, e.window_ms, e.shadow) for e in logged] == [
        ("deny", "burst", 3, 5, 7, 10_000, 0, True),
        ("deny", "per-minute", 3, 2, 0, 60_000, START_MS, False),
    ]
    assert logged_in_usage(store) == 2


def test_a_limit_without_audit_logs_nothing(store: Store) -> None:
    store.check(CheckItem("acme", "Search"), [QUIET])
    store.check_batch([(CheckItem("acme", "Search"), [QUIET])] * 3)
    assert entries(store) == []
    assert logged_in_usage(store) == 0


def test_dry_runs_and_replays_are_not_logged(store: Store) -> None:
    store.check(CheckItem("acme", "Search", dry_run=True), [AUDITED])
    first = store.check(CheckItem("acme", "Search", request_id="r1"), [AUDITED])
    again = store.check(CheckItem("acme", "Search", request_id="r1"), [AUDITED])
    assert again.replayed
    assert first.allowed
    assert [entry.kind for entry in entries(store)] == ["allow"]
    assert logged_in_usage(store) == 1


def test_an_atomic_batch_rolled_back_logs_every_item_as_denied(store: Store) -> None:
    pairs = [(CheckItem("acme", "Put"), [AUDITED])] * 3  # the third is over: nothing is spent
    assert [decision.allowed for decision in store.check_batch(pairs, "atomic")] == [False] * 3
    assert [entry.kind for entry in entries(store)] == ["deny"] * 3
    assert logged_in_usage(store) == 3
    assert store.check(CheckItem("acme", "Put"), [AUDITED]).allowed


def test_every_lease_event_is_logged(store: Store, clock: ManualClock) -> None:
    # An anchor holds the set for the whole test: MemoryStore drops a set (and notices no expiry) once its
    # last lease has expired, Redis a little later (its TTL's slack).
    slots = LimitSpec("slots", "concurrency", 2, key_by=("customer",))
    item = CheckItem("acme", "Stream")
    store.lease_acquire(item, slots, ttl_s=60)
    _, first, first_expiry = store.lease_acquire(item, slots, ttl_s=10)
    assert first is not None
    clock.advance(1_000)
    assert store.lease_renew(first, 20) == START_MS + 21_000
    clock.advance(1_000)
    store.lease_release(first)
    _, second, _ = store.lease_acquire(item, slots, ttl_s=5)
    clock.advance(6_000)  # the second lease expires; a renewal finds it expired
    assert second is not None
    assert store.lease_renew(second, 5) is None
    _, third, _ = store.lease_acquire(item, slots, ttl_s=5)
    clock.advance(6_000)
    _, fourth, _ = store.lease_acquire(item, slots, ttl_s=5)  # the third is dropped as the set is written
    assert third is not None
    assert fourth is not None
    logged = entries(store)[1:]
    assert [(e.kind, e.at_ms - START_MS, e.expires_ms - START_MS * (e.expires_ms > 0)) for e in logged] == [
        ("acquire", 0, 10_000),
        ("renew", 1_000, 21_000),
        ("release", 2_000, 0),
        ("acquire", 2_000, 7_000),
        ("expire", 8_000, 7_000),
        ("acquire", 8_000, 13_000),
        ("expire", 14_000, 13_000),
        ("acquire", 14_000, 19_000),
    ]
    assert {(e.customer, e.key.endswith(":cc:slots:c=acme")) for e in logged} == {("acme", True)}
    assert {(e.operation, e.limit, e.algorithm) for e in logged if e.kind != "expire"} == {
        ("Stream", "slots", "concurrency")
    }
    members = [e.lease for e in logged]
    assert members[0] == members[1] == members[2] == first.split(".", 1)[1]
    assert members[3] == members[4] == second.split(".", 1)[1]
    assert members[5] == members[6] == third.split(".", 1)[1]
    assert first_expiry == START_MS + 10_000
    assert logged_in_usage(store) == 0  # lease events are not decisions


def test_an_audited_lease_logs_its_decision_and_its_acquire(store: Store) -> None:
    audited = LimitSpec("slots", "concurrency", 1, key_by=("customer",), audit=True)
    store.lease_acquire(CheckItem("acme", "Stream"), audited, ttl_s=10)
    store.lease_acquire(CheckItem("acme", "Stream"), audited, ttl_s=10)  # refused: no slot left
    assert [entry.kind for entry in entries(store)] == ["allow", "acquire", "deny"]
    assert logged_in_usage(store) == 2


def test_the_cap_bounds_each_stream(redis_client: redis.Redis, key_prefix: str, clock: ManualClock) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix, clock=clock, log_max_per_slot=10))
    always = LimitSpec("many", "fixed_window", 10_000, period_s=60, key_by=("customer",), audit=True)
    store.check_batch([(CheckItem("acme", "Search"), [always])] * 1_000)
    stream = log_key_of(key_prefix, f"{key_prefix}:c:{{c=acme}}:fw:many")
    assert redis_client.xlen(stream) < 200  # MAXLEN ~ trims whole nodes of 100 entries: at most one over
    assert logged_in_usage(store) == 1_000
    assert 0 < redis_client.pttl(stream) <= 2 * 86_400_000


def test_each_tag_has_its_stream(redis_client: redis.Redis, key_prefix: str, clock: ManualClock) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix, clock=clock))
    per_ip = LimitSpec("per-ip", "fixed_window", 5, period_s=60, key_by=("ip",), audit=True)
    store.check(CheckItem("acme", "Search", ip="10.0.0.1"), [AUDITED, per_ip])
    log = redis_log(redis_client, key_prefix)
    assert sorted(log) == [f"{key_prefix}:dlog:{{c=acme}}", f"{key_prefix}:dlog:{{i=10.0.0.1}}"]
    assert [entry.limit for entry in log[f"{key_prefix}:dlog:{{i=10.0.0.1}}"]] == ["per-ip"]


def test_one_round_trip_per_check_stays_one(redis_url: str, key_prefix: str, clock: ManualClock) -> None:
    from tests.engine.test_round_trips import seen_by_redis

    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    store = Tallied(RedisStore(client, key_prefix, clock=clock))
    store.load_scripts()
    seen = seen_by_redis(redis_url, client, lambda: store.check(CheckItem("acme", "Search"), [AUDITED, QUIET]))
    client.close()
    assert [command for kind, command in seen if kind != "lua"] == ["EVALSHA"]
    assert ("lua", "XADD") in seen


def test_a_cluster_entry_lands_in_the_slot_of_its_counter(cluster_client: Any, cluster_prefix: str) -> None:
    from redis.crc import key_slot

    from apps.engine.store.cluster import ClusterStore

    store = Tallied(ClusterStore(cluster_client, cluster_prefix, clock=ManualClock(START_MS), instance=INSTANCE))
    for customer in ("acme", "globex", "initech"):
        assert store.check(CheckItem(customer, "Search"), [AUDITED]).allowed
        _, lease, _ = store.lease_acquire(CheckItem(customer, "Stream"), SLOTS, ttl_s=10)
        assert lease is not None
        store.lease_release(lease)
        counter = f"{cluster_prefix}:c:{{c={customer}}}:fw:per-minute:c={customer}"
        stream = log_key_of(cluster_prefix, counter)
        assert key_slot(stream.encode()) == key_slot(counter.encode())
        kinds = [text(fields[b"e"]) for _, fields in cluster_client.xrange(stream)]
        assert kinds == ["allow", "acquire", "release"]
