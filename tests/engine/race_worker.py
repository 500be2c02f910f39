"""The load of a race test: threads hammering one key with frozen time (importable by spawned processes)."""

from __future__ import annotations

import threading

import redis

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.redis import RedisStore


def hammer(redis_url: str, prefix: str, spec: LimitSpec, threads: int, attempts: int, now_ms: int) -> list[bool]:
    """Run `threads` threads of `attempts` checks each on one key at the frozen time `now_ms`; return the verdicts."""
    client = redis.Redis.from_url(redis_url, max_connections=threads + 1)
    store = RedisStore(client, prefix, clock=ManualClock(now_ms))
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
