"""One round trip per check and per batch, usage included, as Redis itself sees it (MONITOR)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.redis import RedisStore
from tests.engine.usage_book import Tallied

LIMITS = [
    LimitSpec("per-second", "token_bucket", 10, period_s=1, key_by=("customer",)),
    LimitSpec("per-day", "calendar", 1000, calendar_period="day", key_by=("customer", "resource")),
    LimitSpec("per-ip", "sliding_log", 100, period_s=60, key_by=("ip",)),
]


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url, single_connection_client=True)
    yield connection
    connection.close()


def seen_by_redis(redis_url: str, client: redis.Redis, action: Callable[[], object]) -> list[tuple[str, str]]:
    """(client type, command) of everything Redis ran for `client` during `action`, scripts' commands included."""
    address = client.client_info()["addr"]
    sentinel = f"end-{uuid.uuid4().hex}"
    seen: list[tuple[str, str]] = []
    watcher = redis.Redis.from_url(redis_url)
    with watcher.monitor() as monitor:

        def listen() -> None:
            for event in monitor.listen():
                if sentinel in event["command"]:
                    return
                origin = f"{event['client_address']}:{event['client_port']}"
                if origin == address or event["client_type"] == "lua":
                    seen.append((event["client_type"], event["command"].split(" ", 1)[0].upper()))

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        action()
        client.echo(sentinel)
        thread.join(timeout=10)
    watcher.close()
    assert not thread.is_alive(), "the monitor never saw the end of the action"
    return seen


def sent(events: list[tuple[str, str]]) -> list[str]:
    return [command for kind, command in events if kind != "lua"]


def test_a_check_of_three_limits_is_one_evalsha_that_writes_no_usage(
    redis_url: str, client: redis.Redis, key_prefix: str
) -> None:
    store = Tallied(RedisStore(client, key_prefix, clock=ManualClock()))
    check = CheckItem("acct-1", "PutRecords", resource="shard-1", ip="10.0.0.1")
    store.check(check, LIMITS)  # loads the script
    events = seen_by_redis(redis_url, client, lambda: store.check(check, LIMITS))
    assert sent(events) == ["EVALSHA"]
    # Redis keeps counters: usage is tallied by the caller from the answer (apps/engine/decision_usage.py).
    assert {command for kind, command in events if kind == "lua"} & {"HINCRBY", "SADD"} == set()


def test_a_batch_of_a_hundred_checks_is_one_evalsha(redis_url: str, client: redis.Redis, key_prefix: str) -> None:
    store = Tallied(RedisStore(client, key_prefix))
    pairs = [
        (CheckItem(f"acct-{n % 7}", "PutRecords", resource=f"shard-{n}", ip="10.0.0.1"), LIMITS) for n in range(100)
    ]
    store.check_batch(pairs[:1])
    for mode in ("independent", "atomic"):
        assert sent(seen_by_redis(redis_url, client, lambda m=mode: store.check_batch(pairs, m))) == ["EVALSHA"]


def test_lease_calls_are_one_round_trip_each(redis_url: str, client: redis.Redis, key_prefix: str) -> None:
    store = Tallied(RedisStore(client, key_prefix))
    slots = LimitSpec("slots", "concurrency", 2, key_by=("customer",))
    store.load_scripts()
    acquired: list[str | None] = []
    events = seen_by_redis(
        redis_url, client, lambda: acquired.append(store.lease_acquire(CheckItem("c", "Op"), slots, 30)[1])
    )
    assert sent(events) == ["EVALSHA"]
    lease_id = acquired[0]
    assert lease_id is not None
    assert sent(seen_by_redis(redis_url, client, lambda: store.lease_renew(lease_id, 30))) == ["EVALSHA"]
    assert sent(seen_by_redis(redis_url, client, lambda: store.lease_release(lease_id))) == ["EVALSHA"]
