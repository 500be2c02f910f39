"""What only the Redis store can show: key hygiene, script loading, server time."""

from __future__ import annotations

import pytest
import redis

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.store.redis import RedisStore
from tests.engine.usage_book import Tallied
from tests.servers import free_port

PER_CUSTOMER = ("customer",)
EVERY_ALGORITHM = [
    LimitSpec("fw", "fixed_window", 5, period_s=10, key_by=PER_CUSTOMER),
    LimitSpec("cal", "calendar", 5, calendar_period="month", key_by=PER_CUSTOMER),
    LimitSpec("swc", "sliding_window", 5, period_s=10, key_by=("customer", "resource")),
    LimitSpec("sl", "sliding_log", 5, period_s=10, key_by=("ip",)),
    LimitSpec("tb", "token_bucket", 5, period_s=10, burst=7),
    LimitSpec("lb", "leaky_bucket", 5, period_s=10, key_by=("attr:Type",)),
    LimitSpec("cc", "concurrency", 5, key_by=PER_CUSTOMER),
]


def workload(store: RedisStore) -> None:
    for n in range(12):
        check = CheckItem(f"acct-{n % 3}", "Op", resource="r:1", attributes={"Type": "x"}, ip="10.0.0.1")
        store.check(check, EVERY_ALGORITHM)
        store.check(CheckItem("acct-0", "Op", request_id=f"req-{n}"), EVERY_ALGORITHM[:2])
    store.check_batch([(CheckItem("acct-9", "Op"), EVERY_ALGORITHM)] * 5, "atomic")
    _, lease_id, _ = store.lease_acquire(CheckItem("acct-1", "Op"), EVERY_ALGORITHM[-1], 30)
    assert lease_id is not None
    assert store.lease_renew(lease_id, 60) is not None


def test_every_key_starts_with_the_prefix_and_has_a_ttl(redis_client: redis.Redis, key_prefix: str) -> None:
    for clock in (None, ManualClock()):
        workload(
            Tallied(RedisStore(redis_client, f"{key_prefix}:{'server' if clock is None else 'test'}", clock=clock))
        )
    keys = list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000))
    assert len(keys) > 20
    without_ttl = [key for key in keys if redis_client.pttl(key) == -1]  # -2: expired since the scan
    assert without_ttl == []


def test_server_time_decides_when_no_clock_is_given(redis_client: redis.Redis, key_prefix: str) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix))
    hourly = [LimitSpec("hour", "fixed_window", 2, period_s=3600, key_by=PER_CUSTOMER)]
    first = store.check(CheckItem("acct", "Op"), hourly)
    assert first.allowed
    assert 0 < first.limits[0].reset_ms <= 3_600_000
    store.check(CheckItem("acct", "Op"), hourly)
    denied = store.check(CheckItem("acct", "Op"), hourly)
    assert not denied.allowed
    assert denied.retry_after_ms == denied.limits[0].reset_ms
    server_seconds, _ = redis_client.time()
    assert store.usage_minutes() in ([server_seconds // 60], [server_seconds // 60 - 1, server_seconds // 60])


def test_scripts_reload_after_redis_forgets_them(redis_client: redis.Redis, key_prefix: str) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix, clock=ManualClock()))
    limits = [LimitSpec("l", "fixed_window", 2, period_s=60, key_by=PER_CUSTOMER)]
    assert store.check(CheckItem("acct", "Op"), limits).allowed
    redis_client.script_flush()
    assert store.check(CheckItem("acct", "Op"), limits).limits[0].remaining == 0
    lease_limit = LimitSpec("cc", "concurrency", 1)
    _, lease_id, _ = store.lease_acquire(CheckItem("acct", "Op"), lease_limit, 10)
    redis_client.script_flush()
    assert lease_id is not None
    assert store.lease_renew(lease_id, 10) is not None


def test_look_alike_customers_and_resources_never_share_a_counter(redis_client: redis.Redis, key_prefix: str) -> None:
    store = Tallied(RedisStore(redis_client, key_prefix, clock=ManualClock()))
    limits = [LimitSpec("l", "fixed_window", 1, period_s=60, key_by=("customer", "resource"))]
    pairs = [("a:b", "c"), ("a", "b:c"), ("a}:r=b", "c"), ("a%3Ab", "c"), ("a", "b%3Ac")]
    assert all(store.check(CheckItem(customer, "Op", resource), limits).allowed for customer, resource in pairs)


def test_a_client_decoding_responses_works_the_same(redis_url: str, key_prefix: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store = Tallied(RedisStore(client, key_prefix, clock=ManualClock()))
        limits = [LimitSpec("l", "fixed_window", 1, period_s=60, key_by=PER_CUSTOMER)]
        first = store.check(CheckItem("acct", "Op", request_id="r"), limits)
        assert store.check(CheckItem("acct", "Op", request_id="r"), limits) == first.__class__(
            first.allowed, first.retry_after_ms, first.limits, True
        )
        (row,) = store.usage_rows(store.usage_minutes()[0])
        assert (row.customer, row.allowed) == ("acct", 1)
    finally:
        client.close()


def test_a_long_batch_decides_as_the_reference_models_do(redis_client: redis.Redis, key_prefix: str) -> None:
    """Past 4000 numbers the script unpacks its arguments in several pieces: nothing may shift."""
    clock = ManualClock(1_705_276_800_000)
    stores = [Tallied(RedisStore(redis_client, key_prefix, clock=clock)), Tallied(MemoryStore("mem", clock=clock))]
    limits = [spec for spec in EVERY_ALGORITHM if spec.algorithm != "concurrency"]
    pairs = [
        (
            CheckItem(
                f"acct-{n % 7}",
                f"Op{n % 3}",
                resource=f"r:{n % 2}",
                attributes={"Type": "x"},
                ip="10.0.0.1",
                costs={"requests": n % 3, "bytes": n},
                request_id=f"req-{n % 50}" if n % 4 == 0 else None,
                dry_run=n % 11 == 0,
            ),
            limits,
        )
        for n in range(400)
    ]
    for mode in ("independent", "atomic"):
        got, expected = (store.check_batch(pairs, mode) for store in stores)
        assert got == expected
        clock.advance(1_500)
    minute = clock.now_ms() // 60_000
    assert stores[0].usage_rows(minute) == stores[1].usage_rows(minute)


def test_batches_use_the_batch_client_and_single_checks_the_other(redis_client: redis.Redis, key_prefix: str) -> None:
    nowhere = redis.Redis(port=free_port(), socket_connect_timeout=0.2)  # nothing listens there
    store = RedisStore(nowhere, key_prefix, batch_client=redis_client)
    limit = LimitSpec("per-minute", "fixed_window", 5, period_s=60, key_by=("customer",))
    pairs = [(CheckItem(f"acct-{n}", "PutRecords"), [limit]) for n in range(3)]

    assert [d.allowed for d in store.check_batch(pairs)] == [True, True, True]
    with pytest.raises(redis.ConnectionError):
        store.check(CheckItem("acct-1", "PutRecords"), [limit])
    with pytest.raises(redis.ConnectionError):
        store.check_batch(pairs[:1])  # a batch of one is a single check
