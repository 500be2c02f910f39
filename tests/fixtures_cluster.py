"""Fixtures for the Redis Cluster tests, loaded for the whole suite by tests/conftest.py.

`redis_cluster` is one local cluster (3 masters + 3 replicas) per session (per xdist worker), started the
first time a test asks for it (about 2 s) and removed at the end. Tests may kill and restart its nodes:
every test that uses `cluster_prefix` or `cluster_client` finds it whole (dead nodes restarted empty) and
leaves no keys of its own behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from redis.cluster import RedisCluster

from apps.enforcement.counters.redis_clients import counters_client
from tests.cluster_server import RedisClusterServer, node_client
from tests.servers import MissingBinary

# Generous: a test waits out a failover rather than failing on a slow reply from a busy machine.
TEST_CLIENT_TIMEOUT_MS = 2000


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServer]:
    server = RedisClusterServer()
    try:
        server.start()
    except MissingBinary as error:
        server.cleanup()
        pytest.fail(
            f"`{error}` was not found, so the tests cannot start a local Redis Cluster.\n"
            "Install Redis 7 (Debian/Ubuntu: `apt-get install redis-server`, which brings redis-cli)."
        )
    except BaseException:
        server.cleanup()
        raise
    yield server
    server.cleanup()


@pytest.fixture
def cluster_prefix(redis_cluster: RedisClusterServer) -> Iterator[str]:
    """A key prefix of this test's own on a whole cluster; its keys are deleted afterwards on every master."""
    redis_cluster.heal()
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    yield prefix
    redis_cluster.heal()
    for port in redis_cluster.masters():
        with node_client(port) as client:
            keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
            if keys:
                # One UNLINK per key: keys in different slots cannot share one command, even on one node.
                with client.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.unlink(key)
                    pipe.execute()


@pytest.fixture
def cluster_client(redis_cluster: RedisClusterServer, cluster_prefix: str) -> Iterator[RedisCluster]:
    """A RedisCluster client (made by the production factory) to the fixture cluster; `.test_prefix` is this
    test's `cluster_prefix`."""
    client = counters_client(redis_cluster.url, TEST_CLIENT_TIMEOUT_MS)
    assert isinstance(client, RedisCluster)
    client.test_prefix = cluster_prefix  # type: ignore[attr-defined]
    yield client
    client.close()
