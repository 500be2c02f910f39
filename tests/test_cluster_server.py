"""The local Redis Cluster the cluster tests run on (tests/cluster_server.py): its shape, a failover after a
master is killed (the client keeps working with what reached the replica), an empty node rejoining."""

import time

import pytest
from redis.exceptions import RedisClusterException, RedisError

from tests.cluster_server import SLOTS, NodeView, node_client, node_info

FAILOVER_TIMEOUT_S = 20.0
KEYS = 50


def test_a_cluster_nodes_line_is_read_with_its_slots() -> None:
    line = "07c3 127.0.0.1:30004@40004,host myself,master - 0 0 7 connected 0-2 9 [10->-1a2b] 12-13"

    view = NodeView.parse(line)

    assert (view.port, view.serving_master, view.slot_numbers()) == (30004, True, {0, 1, 2, 9, 12, 13})
    assert NodeView.parse("1a 127.0.0.1:30001@40001 master,fail - 0 0 1 disconnected 0-5").serving_master is False


@pytest.mark.slow
def test_the_cluster_has_three_masters_each_with_a_replica_and_covers_every_slot(redis_cluster) -> None:
    masters, replicas = redis_cluster.masters(), redis_cluster.replicas()

    assert (len(masters), len(replicas), sorted(masters + replicas)) == (3, 3, sorted(redis_cluster.ports))
    assert redis_cluster.url == "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in redis_cluster.ports)
    for port in redis_cluster.ports:
        info = node_info(port, "cluster")
        assert (info["cluster_state"], info["cluster_slots_ok"], info["cluster_size"]) == ("ok", str(SLOTS), "3")
    for port in replicas:
        assert int(node_info(port, "replication")["master_port"]) in masters


@pytest.mark.slow
def test_flush_all_empties_every_master(redis_cluster, cluster_client) -> None:
    keys = [f"{cluster_client.test_prefix}:{{c{n}}}" for n in range(20)]
    for key in keys:
        cluster_client.set(key, 1)

    redis_cluster.flush_all()

    assert [cluster_client.exists(key) for key in keys] == [0] * len(keys)


def _keys_on(client, master: int, prefix: str) -> list[str]:
    """KEYS keys whose slots `master` serves (one hash tag each, so each is a customer of its own)."""
    keys = (f"{prefix}:{{customer-{n}}}:counter" for n in range(10_000))
    return [key for key in keys if client.get_node_from_key(key).port == master][:KEYS]


def _first_success_after(client, key: str, started: float) -> float:
    """Seconds from `started` until an INCR on `key` goes through: what a caller sees of the failover."""
    while time.monotonic() - started < FAILOVER_TIMEOUT_S:
        try:
            client.incr(key)
            return time.monotonic() - started
        except (RedisError, RedisClusterException):
            time.sleep(0.02)
    raise AssertionError(f"the client did not recover within {FAILOVER_TIMEOUT_S}s")


@pytest.mark.slow
def test_a_killed_master_is_replaced_by_its_replica_and_the_client_keeps_its_data(redis_cluster, cluster_client):
    master = redis_cluster.masters()[0]
    keys = _keys_on(cluster_client, master, cluster_client.test_prefix)
    for n, key in enumerate(keys):
        cluster_client.set(key, n)
    with node_client(master) as node:
        assert node.wait(1, 5000) == 1  # every write so far reached the replica

    started = time.monotonic()
    redis_cluster.kill(master)
    failover_s = redis_cluster.wait_for_failover(master, FAILOVER_TIMEOUT_S)
    client_s = _first_success_after(cluster_client, keys[0], started)

    print(f"failover {failover_s:.2f}s after the kill; the client's first success {client_s:.2f}s after it")
    assert master not in redis_cluster.masters()
    assert len(redis_cluster.masters()) == 3
    assert cluster_client.get_node_from_key(keys[0]).port != master
    assert [int(cluster_client.get(key)) for key in keys] == [1] + list(range(1, len(keys)))


@pytest.mark.slow
def test_a_node_restarted_empty_rejoins_as_the_new_masters_replica(redis_cluster, cluster_client) -> None:
    master = redis_cluster.masters()[0]
    keys = _keys_on(cluster_client, master, cluster_client.test_prefix)
    for key in keys:
        cluster_client.set(key, "kept")
    with node_client(master) as node:
        assert node.wait(1, 5000) == 1  # replication is asynchronous: without this a kill may lose them
    redis_cluster.kill(master)
    redis_cluster.wait_for_failover(master, FAILOVER_TIMEOUT_S)

    redis_cluster.restart_empty(master)

    assert master in redis_cluster.replicas()
    assert (len(redis_cluster.masters()), len(redis_cluster.replicas())) == (3, 3)
    # Read through the client first: that is what tells it (by MOVED) who serves the keys now.
    assert [cluster_client.get(key) for key in keys] == [b"kept"] * len(keys)
    new_master = cluster_client.get_node_from_key(keys[0]).port
    assert int(node_info(master, "replication")["master_port"]) == new_master
    with node_client(new_master) as node:
        assert node.wait(1, 5000) == 1
    with node_client(master) as replica:  # the rejoined node got the data back from its new master
        replica.execute_command("READONLY")
        assert [replica.get(key) for key in keys] == ["kept"] * len(keys)
