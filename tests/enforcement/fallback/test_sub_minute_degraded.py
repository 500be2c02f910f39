"""The `database` failure policy keeps each limit at its own grain: a limit of less than a minute is held to its
own period as this process's share (the `local` policy's code), not stretched to a minute; a limit of a minute or
more is still counted in PostgreSQL in windows of its period.

Redis is a real redis-server that answers a first check and is then killed (connection refused from then on).
"""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from apps.apikeys.services import api_key_create
from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.fallback import heartbeat, local
from apps.enforcement.models import FallbackCounter
from apps.engine import MemoryStore
from apps.engine.store.redis import RedisStore
from apps.limits.models import StoreFailurePolicy
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer
from tests.support.live_server import LiveServer, post_status

pytestmark = pytest.mark.django_db

PER_SECOND = 10  # seed 003's shard limit, scaled down: records per second per account and stream
PER_MINUTE = 30
BURST = 70


@pytest.fixture
def redis_killed(monkeypatch, key_prefix):
    """A store on a redis-server that answered once and was then killed; this process alone is alive."""
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url, socket_timeout=0.05, socket_connect_timeout=0.05)
    engine_store_use(RedisStore(client, key_prefix=key_prefix))
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    monkeypatch.setattr(local, "_local_store", MemoryStore(key_prefix="local"))  # this test's shares only
    monkeypatch.setattr(heartbeat, "_live", 1)
    monkeypatch.setattr(heartbeat, "_beaten", True)
    try:
        yield server
    finally:
        engine_store_use(None)
        server.cleanup()


def limits() -> None:
    LimitFactory(
        name="records-per-shard-second", operation=OperationFactory(name="PutRecords"), algorithm="fixed_window",
        quantity=PER_SECOND, period_seconds=1, on_store_failure=StoreFailurePolicy.DATABASE,
        key_by=["customer", "resource"],
    )  # fmt: skip
    LimitFactory(
        name="scalings-per-minute", operation=OperationFactory(name="UpdateShardCount"), algorithm="fixed_window",
        quantity=PER_MINUTE, period_seconds=60, on_store_failure=StoreFailurePolicy.DATABASE, key_by=["customer"],
    )  # fmt: skip


def item(operation: str) -> dict:
    return {"customer": "acct-1", "operation": operation, "resource": "orders-stream"}


def batch(api, operation: str, count: int) -> list[dict]:
    response = api.post("/api/v1/check/batch", {"items": [item(operation)] * count}, format="json")
    assert response.status_code == 200
    return response.json()["results"]


def test_a_ten_per_second_limit_admits_at_most_its_share_of_a_burst_of_70_with_redis_down(api, redis_killed) -> None:
    limits()
    assert api.post("/api/v1/check", item("PutRecords"), format="json").json()["degraded"] is False
    redis_killed.stop()

    # 70 in one batch: one instance alive, so its share is the whole limit, 10 // 1, in each second the batch
    # takes (the items are decided one after the other; a loaded machine may cross into the next second).
    started = time.time()
    results = batch(api, "PutRecords", BURST)
    seconds = int(time.time()) - int(started) + 1

    assert all(result["degraded"] for result in results)
    admitted = sum(result["allowed"] for result in results)
    assert PER_SECOND <= admitted <= PER_SECOND * seconds  # it admitted 70 of 70 when counted per minute
    refused = next(result for result in results if not result["allowed"])
    assert refused["code"] == "OVER_LIMIT"
    assert 0 < refused["retry_after_ms"] <= 1000  # the limit's own second, not the minute
    assert refused["limits"][0]["subject"] == {"customer": "acct-1", "resource": "orders-stream"}
    assert "(10 requests for customer “acct-1”, resource “orders-stream”)" in refused["message"]
    assert not FallbackCounter.objects.exists()  # not counted per minute in PostgreSQL


def test_a_burst_of_70_checks_is_held_to_10_per_second_it_spans(api, redis_killed) -> None:
    limits()
    redis_killed.stop()

    started = time.time()
    statuses = [api.post("/api/v1/check", item("PutRecords"), format="json").status_code for _ in range(BURST)]
    ended = time.time()

    seconds = int(ended) - int(started) + 1  # fixed windows of a second the burst touched
    assert 0 < statuses.count(200) <= PER_SECOND * seconds


def test_a_per_minute_limit_is_still_counted_per_minute_in_postgresql(api, redis_killed) -> None:
    limits()
    redis_killed.stop()

    results = batch(api, "UpdateShardCount", PER_MINUTE + 10)

    assert sum(result["allowed"] for result in results) == PER_MINUTE
    assert all(result["degraded"] for result in results)
    (window,) = FallbackCounter.objects.all()
    assert (window.window_end - window.window_start).total_seconds() == 60
    assert window.used == PER_MINUTE


WORKERS = 2


def live_check(url: str, key: str) -> int:
    return post_status(url, key, item("PutRecords"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_gunicorn_workers_together_admit_at_most_the_limit_per_second_with_redis_killed(
    key_prefix, tmp_path
) -> None:
    """Each worker enforces 10 // 2 = 5 a second: the burst of 70, sent 10 at a time, gets at most 10 a second."""
    limits()
    key = api_key_create(service=ServiceFactory()).secret
    server = RedisServer().start()
    env = {"QUOTA_HEARTBEAT_S": "1", "QUOTA_BREAKER_OPEN_S": "0.5"}
    try:
        with (
            LiveServer(tmp_path, redis_url=server.url, key_prefix=key_prefix, workers=WORKERS, **env) as live,
            ThreadPoolExecutor(max_workers=10) as pool,
        ):
            # One check before the outage: a worker that has served nothing yet must be counted all the same
            # (it beats from its boot, gunicorn_conf.post_worker_init); else the other admits the whole limit.
            assert live_check(live.url, key) == 200
            time.sleep(2.5)  # two beats: each worker has seen the other's
            server.stop()
            started = time.time()
            statuses = list(pool.map(lambda _: live_check(live.url, key), range(BURST)))
            ended = time.time()
    finally:
        server.cleanup()

    seconds = int(ended) - int(started) + 1
    print(f"admitted {statuses.count(200)} of {BURST} over {ended - started:.2f} s ({seconds} windows)")
    assert set(statuses) <= {200, 429}
    assert 0 < statuses.count(200) <= PER_SECOND * seconds
