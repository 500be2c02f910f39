"""Finding 5 of the trust boundary: a call the caller was told failed is never applied afterwards.

A socket timeout ends the client's wait, not the command: a paused Redis (SIGSTOP) reads the queued EVALSHA when
it resumes (SIGCONT) and used to run it then, so a 503 under `closed` still spent quota and a degraded admission was
counted twice in usage (once by the ledger, once by the late script). Real redis-server, real signals.
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.db import connection

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm, StoreFailurePolicy
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TIMEOUT_S = 0.05
PAUSE_S = 0.4  # well past the client's timeout


@pytest.fixture
def paused_redis(monkeypatch, key_prefix):
    """A throwaway redis-server behind a store with a 50 ms timeout; the breaker never opens (every call is sent)."""
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
    engine_store_use(RedisStore(client, key_prefix=key_prefix))
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    _open_connections(client, 8)
    yield server
    engine_store_use(None)
    client.close()
    server.cleanup()


def _open_connections(client: redis.Redis, count: int) -> None:
    """Connect `count` pooled connections now: a command Redis has received on an established connection is what
    runs late (in production every pooled connection is one); a connection opened while Redis sleeps is not."""
    pool = client.connection_pool
    opened = [pool.get_connection() for _ in range(count)]
    for one in opened:
        one.send_command("PING")
        one.read_response()
        pool.release(one)


def _limits() -> None:
    for name, policy in (("Closed", StoreFailurePolicy.CLOSED), ("Open", StoreFailurePolicy.OPEN)):
        LimitFactory(
            name=name.lower(), operation=OperationFactory(name=name), quantity=10, period_seconds=3600,
            on_store_failure=policy, key_by=["customer"],
        )  # fmt: skip
    LimitFactory(
        name="slots", operation=OperationFactory(name="Hold"), algorithm=Algorithm.CONCURRENCY, quantity=3,
        on_store_failure=StoreFailurePolicy.CLOSED, key_by=["customer"],
    )  # fmt: skip


def _warm_up(api, server: RedisServer) -> None:
    """Every script loaded, as on a Redis that has served for a while (a paused Redis would answer NOSCRIPT
    to a script it does not know, and run nothing); then this warm-up's keys are deleted."""
    for operation in ("Closed", "Open"):
        assert api.post("/api/v1/check", {"customer": "warm", "operation": operation}, format="json").status_code == 200
    lease = api.post("/api/v1/leases", {"customer": "warm", "operation": "Hold", "ttl_s": 60}, format="json")
    assert api.post(f"/api/v1/leases/{lease.json()['lease_id']}/renew", {"ttl_s": 60}, format="json").status_code == 200
    assert api.delete(f"/api/v1/leases/{lease.json()['lease_id']}").status_code == 204
    assert api.put("/api/v1/customers/warm/allocations/slots", {"held": 1}, format="json").status_code == 200
    client = redis.Redis.from_url(server.url)
    try:
        client.flushall()
        client.config_resetstat()
    finally:
        client.close()
    decision_ledger.discard()


def _in_thread(call):
    try:
        return call()
    finally:
        connection.close()  # the thread's own database connection


def _keys(server: RedisServer) -> list[bytes]:
    client = redis.Redis.from_url(server.url)
    try:
        return sorted(client.keys("*"))
    finally:
        client.close()


def test_checks_and_leases_answered_while_redis_was_paused_are_not_run_when_it_resumes(
    paused_redis, service_key
) -> None:
    _limits()
    api = client_with(service_key)
    _warm_up(api, paused_redis)
    calls = {
        "closed": lambda: api.post("/api/v1/check", {"customer": "c1", "operation": "Closed"}, format="json"),
        "open": lambda: api.post("/api/v1/check", {"customer": "c1", "operation": "Open"}, format="json"),
        "lease": lambda: api.post(
            "/api/v1/leases", {"customer": "c1", "operation": "Hold", "ttl_s": 60}, format="json"
        ),
        "allocation": lambda: api.put("/api/v1/customers/c1/allocations/slots", {"held": 2}, format="json"),
    }
    paused_redis.signal(signal.SIGSTOP)
    try:
        # At once, as concurrent requests are: each sends on an established connection of its own.
        with ThreadPoolExecutor(len(calls)) as pool:
            futures = {name: pool.submit(_in_thread, call) for name, call in calls.items()}
            answers = {name: future.result() for name, future in futures.items()}
    finally:
        time.sleep(PAUSE_S)
        paused_redis.signal(signal.SIGCONT)
    time.sleep(0.3)  # Redis reads what was queued while it slept

    assert answers["closed"].status_code == 503
    assert (answers["open"].status_code, answers["open"].json()["degraded"]) == (200, True)
    assert (answers["lease"].status_code, answers["allocation"].status_code) == (503, 503)
    # Nothing the paused Redis received was applied: no counter, lease set or usage hash exists.
    assert _keys(paused_redis) == []
    # Each answered decision is counted once, by this process's ledger (the degraded admission and the 503).
    pending = {(row.operation, row.allowed, row.unavailable) for row in decision_ledger.pending_rows()}
    assert pending == {("Open", 1, 0), ("Closed", 0, 1)}
    # The closed limit still has all of its quota.
    after = api.post("/api/v1/check", {"customer": "c1", "operation": "Closed"}, format="json")
    assert after.status_code == 200
    assert after.json()["limits"][0]["remaining"] == 9
