"""When Redis cannot answer, each limit follows its failure policy; answers say degraded: true.

Redis here is a real client pointed at a loopback port nobody listens on (connection refused).
"""

import datetime as dt
import time

import pytest
import redis

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import OPEN, CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.fallback import fallback_purge, heartbeat, local
from apps.enforcement.models import FallbackCounter, FallbackRequest, InstanceHeartbeat
from apps.engine import MemoryStore
from apps.engine.store.redis import RedisStore
from apps.limits.models import StoreFailurePolicy
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def dead_redis(monkeypatch):
    client = redis.Redis.from_url(
        f"redis://127.0.0.1:{free_port()}/0", socket_timeout=0.05, socket_connect_timeout=0.05
    )
    engine_store_use(RedisStore(client, key_prefix="dead"))
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    yield
    engine_store_use(None)


@pytest.fixture
def api_without_redis(service_key, dead_redis):
    return client_with(service_key)


def limit(policy, quantity=2, **fields):
    return LimitFactory(
        name=f"{policy}-limit", operation=OperationFactory(name="Op"), quantity=quantity, on_store_failure=policy,
        key_by=["customer"], **fields,
    )  # fmt: skip


def check(api, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "Op", **fields}, format="json")


def test_open_admits_and_says_degraded(api_without_redis) -> None:
    limit(StoreFailurePolicy.OPEN, quantity=1)

    answers = [check(api_without_redis) for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert all(answer.json()["degraded"] for answer in answers)


def test_closed_refuses_with_503_in_the_error_shape(api_without_redis) -> None:
    limit(StoreFailurePolicy.CLOSED)

    response = check(api_without_redis)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "store_unavailable"


def test_database_counts_in_postgresql_per_window(api_without_redis) -> None:
    limit(StoreFailurePolicy.DATABASE, quantity=2)

    answers = [check(api_without_redis) for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[2].json()["degraded"] is True
    assert 0 < answers[2].json()["retry_after_ms"] <= 60_000
    assert FallbackCounter.objects.get().used == 2


def test_database_policy_does_not_count_a_retried_request_id_twice(api_without_redis) -> None:
    limit(StoreFailurePolicy.DATABASE, quantity=5)

    for _ in range(3):
        assert check(api_without_redis, request_id="same").status_code == 200

    assert FallbackCounter.objects.get().used == 1


def test_database_policy_refuses_a_cost_above_the_window_for_good(api_without_redis) -> None:
    limit(StoreFailurePolicy.DATABASE, quantity=3, unit="records")

    response = check(api_without_redis, costs={"records": 4})

    assert response.status_code == 429
    assert response.json()["retry_after_ms"] is None
    assert not FallbackCounter.objects.filter(used__gt=0).exists()


def test_local_enforces_this_instances_share_of_the_limit(api_without_redis, monkeypatch) -> None:
    limit(StoreFailurePolicy.LOCAL, quantity=4, algorithm="fixed_window")
    monkeypatch.setattr(heartbeat, "_live", 2)
    monkeypatch.setattr(heartbeat, "_beaten", True)  # else the first count replaces the 2 with this process alone
    monkeypatch.setattr(local, "_local_store", MemoryStore(key_prefix="local"))  # this test's counters only

    statuses = [check(api_without_redis, customer="acct-local").status_code for _ in range(3)]

    assert statuses == [200, 200, 429]


def test_heartbeats_count_live_instances() -> None:
    assert heartbeat.heartbeat_beat(interval_s=10) >= 1


def test_the_breaker_opens_so_later_checks_do_not_wait_on_redis(service_key, monkeypatch) -> None:
    from tests.api_fixtures import client_with

    # A port that accepts nothing: every attempt costs the connect timeout until the breaker opens.
    client = redis.Redis.from_url(
        f"redis://127.0.0.1:{free_port()}/0", socket_timeout=0.05, socket_connect_timeout=0.05
    )
    engine_store_use(RedisStore(client, key_prefix="dead"))
    breaker = CircuitBreaker(failure_threshold=3, open_s=60)
    monkeypatch.setattr(store, "redis_breaker", breaker)
    limit(StoreFailurePolicy.OPEN)
    api = client_with(service_key)
    try:
        for _ in range(3):
            check(api)
        assert breaker.state == OPEN
        started = time.perf_counter()
        assert check(api).json()["degraded"] is True
        assert time.perf_counter() - started < 0.05
    finally:
        engine_store_use(None)


def test_purge_removes_finished_windows_old_request_ids_and_gone_instances() -> None:
    now = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    FallbackCounter.objects.create(key="old", window_start=now - dt.timedelta(minutes=2), window_end=now, used=1)
    FallbackCounter.objects.create(key="live", window_start=now, window_end=now + dt.timedelta(minutes=1), used=1)
    FallbackRequest.objects.create(customer="a", request_id="r", allowed=True)
    FallbackRequest.objects.filter(request_id="r").update(created_at=now - dt.timedelta(minutes=11))
    InstanceHeartbeat.objects.create(instance="gone", seen_at=now - dt.timedelta(hours=2))
    InstanceHeartbeat.objects.create(instance="here", seen_at=now)

    purged = fallback_purge(now=now)

    assert purged == {"fallback_counters": 1, "fallback_requests": 1, "heartbeats": 1}
    assert list(FallbackCounter.objects.values_list("key", flat=True)) == ["live"]
    assert list(InstanceHeartbeat.objects.values_list("instance", flat=True)) == ["here"]
