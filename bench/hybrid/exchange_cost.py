"""What one hybrid exchange costs Redis (hybrid_sync.lua), by the number of instances on the counter, and what the
usage script of a /api/v1/sync costs (hybrid_usage.lua): Redis-side microseconds per call from INFO commandstats
(the script alone, no network), and the client's round trip.

Each case fills one counter with N instances (each reporting a count in the current window), then times `--calls`
exchanges of those instances in turn, as every instance does once per sync interval. The exchange reads the whole
hash, so its cost grows with N; the store keeps at most MAX_INSTANCES (256) per counter.

    REDIS_URL=redis://... .venv/bin/python -m bench.hybrid.exchange_cost [--calls 2000] [--instances 1 16 64 256]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

import redis

from apps.engine.hybrid_peers import RedisPeers

WINDOW = 60_000


def _evalsha_usec(client: redis.Redis) -> float:
    stats = client.info("commandstats")
    return float(stats.get("cmdstat_evalsha", {}).get("usec_per_call", 0.0))


def exchange_case(client: redis.Redis, instances: int, calls: int) -> tuple[float, float]:
    """(Redis µs per exchange, client round trip µs) on a counter of `instances` instances."""
    peers = RedisPeers(client, retention_ms=3 * WINDOW)
    key = f"bench:h:{{c=acct}}:{uuid.uuid4().hex}"
    now = int(time.time() * 1000)
    start = now - now % WINDOW
    for n in range(instances):
        peers.exchange(key, f"i{n}", start, start - WINDOW, 1, 0)
    client.config_resetstat()
    began = time.perf_counter()
    for n in range(calls):
        peers.exchange(key, f"i{n % instances}", start, start - WINDOW, 2 + n // instances, 0)
    round_trip = (time.perf_counter() - began) / calls * 1e6
    usec = _evalsha_usec(client)
    client.delete(key)
    return usec, round_trip


def usage_case(client: redis.Redis, calls: int) -> tuple[float, float] | None:
    """(Redis µs, round trip µs) of hybrid_usage.lua with a report and two counters; None before it existed."""
    try:
        from apps.engine.hybrid_usage import RedisUsageBalances, ReportedCounter
    except ImportError:
        return None
    balances = RedisUsageBalances(client, f"bench-{uuid.uuid4().hex[:8]}")
    client.config_resetstat()
    began = time.perf_counter()
    for n in range(calls):
        counters = [ReportedCounter(name, "requests", WINDOW, n, 0, 5) for name in ("minute", "daily")]
        balances.add("acct", "sdk:i", n, [("requests", 1)], counters)
    return _evalsha_usec(client), (time.perf_counter() - began) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 16, 64, 256])
    options = parser.parse_args()
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    print("| instances | Redis µs / exchange | round trip µs |")
    print("|---|---|---|")
    for instances in options.instances:
        usec, trip = exchange_case(client, instances, options.calls)
        print(f"| {instances} | {usec:.1f} | {trip:.0f} |")
    usage = usage_case(client, options.calls)
    if usage is not None:
        print(f"\nhybrid_usage.lua (a report, two counters): Redis {usage[0]:.1f} µs, round trip {usage[1]:.0f} µs")


if __name__ == "__main__":
    main()
