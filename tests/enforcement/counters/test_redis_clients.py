"""The counters' Redis client factory: which client a URL gives, what a malformed URL says, and a real
round trip through a Redis Cluster (the local one of tests/fixtures_cluster.py)."""

import pytest
import redis
from redis.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError, RedisClusterException

from apps.enforcement.counters.redis_clients import (
    CLUSTER_RETRIES,
    COUNTERS_ERRORS,
    cluster_nodes,
    counters_client,
    is_cluster_url,
)
from tests.cluster_server import free_ports, node_client


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis+cluster://127.0.0.1:7000", True),
        ("REDISS+CLUSTER://a:1,b:2", True),
        ("redis://127.0.0.1:6379/0", False),
        ("rediss://cache.example:6380/1", False),
        ("unix:///run/redis.sock?db=0", False),
    ],
)
def test_a_cluster_url_is_told_by_its_scheme(url: str, expected: bool) -> None:
    assert is_cluster_url(url) is expected


def test_a_cluster_url_lists_every_node_with_the_default_port_when_none_is_given() -> None:
    url = "rediss+cluster://user:secret@10.0.0.1:7000, cache-2.internal ,[::1]:7002/0"

    assert cluster_nodes(url) == [("10.0.0.1", 7000), ("cache-2.internal", 6379), ("::1", 7002)]


def test_a_single_redis_url_gives_a_redis_client_with_the_timeouts_asked() -> None:
    client = counters_client("redis://127.0.0.1:6399/2", 50, read_timeout_ms=1000)

    assert type(client) is redis.Redis
    options = client.connection_pool.connection_kwargs
    assert (options["socket_connect_timeout"], options["socket_timeout"], options["db"]) == (0.05, 1.0, 2)


def test_the_read_timeout_defaults_to_the_connect_timeout_and_unix_sockets_work() -> None:
    client = counters_client("unix:///run/redis/redis.sock?db=0", 80)

    options = client.connection_pool.connection_kwargs
    assert (options["path"], options["socket_timeout"]) == ("/run/redis/redis.sock", 0.08)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "needs a scheme"),
        ("127.0.0.1:6379", "needs a scheme"),
        ("memcached://127.0.0.1:11211", "unknown scheme 'memcached'"),
        ("redis+cluster://", "has no host"),
        ("redis+cluster://:7000", "has no host"),
        ("redis+cluster://a:7000,,b:7001", "has no host"),
        ("redis+cluster://a:7000,", "has no host"),
        ("redis+cluster://a:port", "bad port 'port'"),
        ("redis+cluster://a:70000", "bad port '70000'"),
        ("redis+cluster://a:0", "bad port '0'"),
        ("redis+cluster://a:7000,redis://b:7001", "mixes schemes"),
        ("redis+cluster://a:7000,rediss+cluster://b:7001", "mixes schemes"),
        ("redis://a:7000,b:7001", "lists several nodes"),
        ("redis://a:7000,redis+cluster://b:7001", "lists several nodes"),
        ("redis+cluster://a:7000/3", "only database 0"),
        ("redis+cluster://a:7000?ssl_cert_reqs=none", "no ?options"),
    ],
)
def test_a_malformed_url_says_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        counters_client(url, 50)


def test_an_error_message_never_shows_the_password() -> None:
    with pytest.raises(ValueError, match="bad port") as raised:
        counters_client("redis+cluster://app:hunter2@a:7000,b:port", 50)

    assert "hunter2" not in str(raised.value)
    assert "app:***@a:7000" in str(raised.value)


@pytest.mark.parametrize(("timeout_ms", "read_timeout_ms"), [(0, None), (-5, None), (50, 0)])
def test_timeouts_must_be_positive(timeout_ms: int, read_timeout_ms: int | None) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        counters_client("redis://127.0.0.1:6379/0", timeout_ms, read_timeout_ms)


def test_a_cluster_with_no_node_answering_raises_an_error_the_store_must_catch() -> None:
    url = "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in free_ports(2))

    with pytest.raises(RedisClusterException) as raised:
        counters_client(url, 100)

    assert isinstance(raised.value, COUNTERS_ERRORS)
    assert not isinstance(raised.value, redis.RedisError)  # why COUNTERS_ERRORS exists


@pytest.mark.slow
def test_a_cluster_url_gives_a_cluster_client_that_round_trips(redis_cluster, cluster_prefix) -> None:
    # One listed node is enough: the client reads the other masters from it.
    url = f"redis+cluster://127.0.0.1:{redis_cluster.ports[0]}"
    client = counters_client(url, 500, read_timeout_ms=700)
    keys = [f"{cluster_prefix}:{{customer-{n}}}:counter" for n in range(30)]

    assert isinstance(client, RedisCluster)
    for n, key in enumerate(keys):
        client.incrby(key, n)
    assert [int(client.get(key)) for key in keys] == list(range(30))
    assert len({client.keyslot(key) for key in keys}) == 30
    assert sorted(node.port for node in client.get_primaries()) == redis_cluster.masters()
    assert len({client.get_node_from_key(key).port for key in keys}) == 3  # every master holds some
    node = client.get_primaries()[0].redis_connection
    assert node.connection_pool.connection_kwargs["socket_timeout"] == 0.7
    assert node.connection_pool.connection_kwargs["socket_connect_timeout"] == 0.5
    assert client.retry.get_retries() == CLUSTER_RETRIES
    assert client.nodes_manager._require_full_coverage is False
    client.close()


@pytest.mark.slow
def test_a_script_runs_on_keys_sharing_a_hash_tag_and_is_refused_across_slots(cluster_client) -> None:
    prefix = cluster_client.test_prefix
    script = "return redis.call('incr', KEYS[1]) + redis.call('incr', KEYS[2])"
    same = [f"{prefix}:{{acct-1}}:day", f"{prefix}:{{acct-1}}:minute"]
    across = [f"{prefix}:{{acct-1}}:day", f"{prefix}:{{acct-2}}:day"]
    assert cluster_client.keyslot(across[0]) != cluster_client.keyslot(across[1])

    assert cluster_client.eval(script, 2, *same) == 2
    # The client refuses before sending (not a RedisError: COUNTERS_ERRORS covers it) ...
    with pytest.raises(RedisClusterException, match="same key slot"):
        cluster_client.eval(script, 2, *across)
    # ... and a node refuses too, when a command with keys in two slots reaches it.
    master = cluster_client.get_node_from_key(across[0]).port
    with node_client(master) as node, pytest.raises(ClusterCrossSlotError):
        node.mset({across[0]: 1, across[1]: 1})
    assert cluster_client.get(across[0]) == b"1"  # nothing of the refused calls was applied
