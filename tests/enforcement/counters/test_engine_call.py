"""One guarded path to the store (store.engine_call): with Redis killed, once the breaker is open, checks,
lease calls and the limits read-out make no connection attempt and answer by their failure policy at once.

A counting TCP proxy sits between the engine's Redis client and a real redis-server, which is SIGKILLed:
every attempt to reach Redis is a connection the proxy sees.
"""

import time
from collections.abc import Iterator

import pytest
import redis

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import OPEN, CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm, StoreFailurePolicy
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer
from tests.support.tcp_proxy import CountingProxy

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

FAILURES_TO_OPEN = 2
SOCKET_TIMEOUT_S = 1.5
# Below the client's socket timeouts: an answer this fast did not wait on Redis. (Not 0.1 s: a loaded 2-core CI
# machine took 0.32 s for such a request without waiting on anything.)
ANSWERED_AT_ONCE_S = 1.0


@pytest.fixture
def proxied_redis(key_prefix, monkeypatch) -> Iterator[tuple[RedisServer, CountingProxy]]:
    server = RedisServer().start()
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=FAILURES_TO_OPEN, open_s=60))
    with CountingProxy(server.port) as proxy:
        client = redis.Redis.from_url(
            proxy.url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S
        )
        engine_store_use(RedisStore(client, key_prefix=key_prefix))
        try:
            yield server, proxy
        finally:
            engine_store_use(None)
            client.close()
            server.cleanup()


@pytest.fixture
def api(service_key):
    for name, policy in (("Session", StoreFailurePolicy.CLOSED), ("Browse", StoreFailurePolicy.OPEN)):
        LimitFactory(
            name=name.lower(), operation=OperationFactory(name=name), algorithm=Algorithm.CONCURRENCY, quantity=2,
            period_seconds=600, key_by=["customer"], on_store_failure=policy,
        )  # fmt: skip
    LimitFactory(name="per-minute", operation=OperationFactory(name="Read"), quantity=100, key_by=["customer"])
    return client_with(service_key)


def acquire(api, operation: str):
    return api.post("/api/v1/leases", {"customer": "acct-1", "operation": operation}, format="json")


def timed(call):
    started = time.perf_counter()
    response = call()
    return response, time.perf_counter() - started


def kill_and_open_the_breaker(server: RedisServer, api) -> None:
    server.stop()
    for _ in range(FAILURES_TO_OPEN):
        assert acquire(api, "Session").status_code == 503
    assert store.redis_breaker.state == OPEN


def test_lease_calls_make_no_connection_attempt_once_the_breaker_is_open(proxied_redis, api) -> None:
    server, proxy = proxied_redis
    lease_id = acquire(api, "Session").json()["lease_id"]
    kill_and_open_the_breaker(server, api)
    attempts = proxy.connections

    closed, closed_s = timed(lambda: acquire(api, "Session"))
    opened, opened_s = timed(lambda: acquire(api, "Browse"))
    renewed, renewed_s = timed(lambda: api.post(f"/api/v1/leases/{lease_id}/renew", {}, format="json"))
    released, released_s = timed(lambda: api.delete(f"/api/v1/leases/{lease_id}"))
    checked, checked_s = timed(
        lambda: api.post("/api/v1/check", {"customer": "acct-1", "operation": "Read"}, format="json")
    )

    assert proxy.connections == attempts
    assert (closed.status_code, closed.json()["error"]["code"]) == (503, "store_unavailable")
    assert (opened.status_code, opened.json()["lease_id"], opened.json()["degraded"]) == (201, None, True)
    assert (renewed.status_code, renewed.json()["error"]["code"]) == (503, "store_unavailable")
    assert released.status_code == 204
    assert checked.status_code == 200
    assert max(closed_s, opened_s, renewed_s, released_s, checked_s) < ANSWERED_AT_ONCE_S


def test_the_limits_read_out_lists_the_limits_with_nothing_remaining_known(proxied_redis, api) -> None:
    server, proxy = proxied_redis
    kill_and_open_the_breaker(server, api)
    attempts = proxy.connections

    response = api.get("/api/v1/customers/acct-1/limits")

    assert proxy.connections == attempts
    assert response.status_code == 200
    body = response.json()
    assert body["degraded"] is True
    assert {row["name"]: row["remaining"] for row in body["limits"]} == {
        "session": None,
        "browse": None,
        "per-minute": None,
    }


def test_with_redis_dead_and_the_breaker_closed_the_read_out_still_answers(proxied_redis, api) -> None:
    server, _ = proxied_redis
    server.stop()

    response = api.get("/api/v1/customers/acct-1/limits")

    assert (response.status_code, response.json()["degraded"]) == (200, True)
    assert store.redis_breaker.state != OPEN  # one failure so far: below the threshold
