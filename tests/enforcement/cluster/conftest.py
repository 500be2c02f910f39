"""Two real platform processes (the production gunicorn config) whose counters live on the test Redis Cluster.

Started once for this folder (a few seconds) rather than per test; tests keep out of each other's way with
customers of their own. The configuration is committed outside any test transaction, so the fixture removes it
afterwards (flush, as pytest-django's transactional tests do) and deletes its keys on every master of a healed
cluster.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.cluster_server import RedisClusterServer, node_client
from tests.support.database import database_flush
from tests.support.live_server import LiveServer

LIMIT_SHARED = 40  # per customer per hour: the two-process race
LIMIT_BUSY = 60  # per customer per hour: the failover test
LIMIT_SPREAD = 2  # per customer per hour, beside a per-IP and a global limit on other slots
LIMIT_ATOMIC = 3  # per customer per hour: atomic batches over two customers' slots (open: degraded would admit)
PLATFORM_YAML = f"""
operations:
  - {{name: Shared}}
  - {{name: Busy}}
  - {{name: MixedOpen}}
  - {{name: MixedClosed}}
  - {{name: Spread}}
  - {{name: Atomic}}
customers:
  - {{id: cluster-shared-1}}
limits:
  - {{name: shared, operation: Shared, algorithm: fixed_window, limit: {LIMIT_SHARED}, period: hour,
     key_by: [customer], on_store_failure: closed}}
  - {{name: busy, operation: Busy, algorithm: fixed_window, limit: {LIMIT_BUSY}, period: hour,
     key_by: [customer], on_store_failure: open}}
  - {{name: mixed-open-customer, operation: MixedOpen, algorithm: fixed_window, limit: 100, period: hour,
     key_by: [customer], on_store_failure: open}}
  - {{name: mixed-open-ip, operation: MixedOpen, algorithm: fixed_window, limit: 100, period: hour,
     key_by: [ip], on_store_failure: open}}
  - {{name: mixed-closed-customer, operation: MixedClosed, algorithm: fixed_window, limit: 100, period: hour,
     key_by: [customer], on_store_failure: closed}}
  - {{name: mixed-closed-ip, operation: MixedClosed, algorithm: fixed_window, limit: 100, period: hour,
     key_by: [ip], on_store_failure: closed}}
  - {{name: spread-customer, operation: Spread, algorithm: fixed_window, limit: {LIMIT_SPREAD}, period: hour,
     key_by: [customer], on_store_failure: closed}}
  - {{name: spread-ip, operation: Spread, algorithm: sliding_log, limit: 100, period: hour, key_by: [ip],
     on_store_failure: closed}}
  - {{name: spread-global, operation: Spread, algorithm: token_bucket, limit: 1000, period: hour, key_by: [],
     on_store_failure: closed}}
  - {{name: atomic-customer, operation: Atomic, algorithm: fixed_window, limit: {LIMIT_ATOMIC}, period: hour,
     key_by: [customer], on_store_failure: open, audit: true}}
services:
  - {{name: cluster-tests, operations: []}}
"""
# The hot path's default (50 ms) is a production budget; on a busy two-core test machine running a cluster, two
# servers and the client threads, a slow reply would turn an exact race into a degraded answer.
REDIS_TIMEOUT_MS = "500"


@dataclass(frozen=True)
class ClusterPlatform:
    urls: tuple[str, str]
    service_key: str
    key_prefix: str
    cluster: RedisClusterServer


@dataclass(frozen=True)
class Answer:
    """One check as the client saw it: status None means the connection itself failed."""

    customer: str
    sent: float
    done: float
    status: int | None
    body: dict[str, Any]
    error: str = ""


def check(url: str, key: str, body: dict[str, Any], timeout_s: float = 10.0, path: str = "/api/v1/check") -> Answer:
    """POST /api/v1/check (or `path`); any HTTP status is an answer, a connection failure is recorded as one."""
    request = urllib.request.Request(  # noqa: S310 - loopback test server
        f"{url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    sent = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    except OSError as error:
        return Answer(body.get("customer", ""), sent, time.monotonic(), None, {}, f"{type(error).__name__}: {error}")
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = {"unparsed": payload[:200].decode(errors="replace")}
    return Answer(body.get("customer", ""), sent, time.monotonic(), status, parsed)


def keys_on_masters(cluster: RedisClusterServer, prefix: str) -> dict[int, list[str]]:
    """Every key under `prefix` on every master, by port."""
    found: dict[int, list[str]] = {}
    for port in cluster.masters():
        with node_client(port) as client:
            found[port] = sorted(client.scan_iter(match=f"{prefix}*", count=1000))
    return found


def _delete_keys(cluster: RedisClusterServer, prefix: str) -> None:
    for port, keys in keys_on_masters(cluster, prefix).items():
        if keys:
            # One UNLINK per key: keys in different slots cannot share one command, even on one node.
            with node_client(port) as client, client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.unlink(key)
                pipe.execute()


@pytest.fixture(scope="package")
def cluster_platform(
    django_db_setup, django_db_blocker, redis_url, redis_cluster, tmp_path_factory
) -> Iterator[ClusterPlatform]:

    from apps.apikeys.models import Service
    from apps.apikeys.services import api_key_create
    from apps.limits.config_io import config_import, config_yaml_load

    redis_cluster.heal()
    key_prefix = f"test-cl-{uuid.uuid4().hex[:10]}"
    with django_db_blocker.unblock():
        config_import(document=config_yaml_load(PLATFORM_YAML))
        service_key = api_key_create(service=Service.objects.get(name="cluster-tests")).secret
    env = {
        "COUNTERS_REDIS_URL": redis_cluster.url,
        "QUOTA_REDIS_TIMEOUT_MS": REDIS_TIMEOUT_MS,
        # No background writes to the test database behind the tests' back.
        "QUOTA_BOOKKEEPING_FLUSH_S": "0",
        "QUOTA_HEARTBEAT_S": "0",
    }
    try:
        first, second = tmp_path_factory.mktemp("cluster-a"), tmp_path_factory.mktemp("cluster-b")
        with (
            LiveServer(first, redis_url=redis_url, key_prefix=key_prefix, workers=2, **env) as a,
            LiveServer(second, redis_url=redis_url, key_prefix=key_prefix, workers=2, **env) as b,
        ):
            yield ClusterPlatform((a.url, b.url), service_key, key_prefix, redis_cluster)
    finally:
        with django_db_blocker.unblock():
            database_flush()
        redis_cluster.heal()
        _delete_keys(redis_cluster, key_prefix)


@pytest.fixture
def counters_store(cluster_platform: ClusterPlatform) -> Iterator[Any]:
    """The servers' counters as a test reads them: a ClusterStore on a client of its own, closed after the test
    (left to the garbage collector, its sockets warned in whichever test collected them)."""
    from apps.enforcement.counters.redis_clients import counters_client
    from apps.enforcement.counters.seeding import usage_seeds
    from apps.engine.store.cluster import ClusterStore

    with counters_client(cluster_platform.cluster.url, 2000) as client:
        yield ClusterStore(client, key_prefix=cluster_platform.key_prefix, seeder=usage_seeds)
