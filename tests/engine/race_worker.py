"""The load of a race test: threads hammering one key with frozen time (importable by spawned processes)."""

from __future__ import annotations

import threading

import redis
from redis.cluster import ClusterNode, RedisCluster

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.cluster import ClusterStore
from apps.engine.store.redis import RedisStore

CLUSTER_SCHEME = "redis+cluster://"


def store_for(redis_url: str, prefix: str, clock: ManualClock, connections: int) -> tuple[redis.Redis, RedisStore]:
    """(client, store) for a plain Redis URL, or a ClusterStore for redis+cluster://host:port,host:port."""
    if not redis_url.startswith(CLUSTER_SCHEME):
        client = redis.Redis.from_url(redis_url, max_connections=connections)
        return client, RedisStore(client, prefix, clock=clock)
    nodes = [ClusterNode(*node.rsplit(":", 1)) for node in redis_url[len(CLUSTER_SCHEME) :].split(",")]
    cluster = RedisCluster(startup_nodes=nodes, max_connections=connections)
    return cluster, ClusterStore(cluster, prefix, clock=clock)  # type: ignore[return-value]


def hammer(redis_url: str, prefix: str, spec: LimitSpec, threads: int, attempts: int, now_ms: int) -> list[bool]:
    """Run `threads` threads of `attempts` checks each on one key at the frozen time `now_ms`; return the verdicts."""
    client, store = store_for(redis_url, prefix, ManualClock(now_ms), threads + 1)
    check = CheckItem("hot-customer", "Op", resource="hot-resource")
    start = threading.Barrier(threads)
    verdicts: list[bool] = []
    lock = threading.Lock()

    def work() -> None:
        start.wait()
        for _ in range(attempts):
            if spec.algorithm == "concurrency":
                allowed = store.lease_acquire(check, spec, 3600)[0].allowed
            else:
                allowed = store.check(check, [spec]).allowed
            with lock:
                verdicts.append(allowed)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    client.close()
    return verdicts
