"""Engine cost probe: Redis CPU (EVALSHA usec_per_call from INFO commandstats) and Python CPU per call.

    REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python bench/engine/cost.py [--calls 2000] [--algorithms a,b]
        [--period-s 60] [--not-durable] [--audit]

For a fixed workload per algorithm: single checks of 3 limits, batches of 100 on the same keys and
batches of 100 over 100 customers. Redis time is the delta of the EVALSHA counters around each case
(use a Redis nobody else calls EVALSHA on); Python time is time.process_time of this process, so
both are CPU, not wall clock, and far less noisy than rates on a shared machine. --audit marks the three
limits audited: every decision is also written to the decision log (XADD in the same call, issue 17). Not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.engine.run import three_limits  # noqa: E402
from bench.engine.targets import (  # noqa: E402
    REDIS_US_PER_BATCH_DECISION,
    REDIS_US_PER_CHECK,
    at_most,
    per_core,
)

ALGORITHMS = ("fixed_window", "calendar", "sliding_window", "sliding_log", "token_bucket", "leaky_bucket")


def evalsha_stats(client: redis.Redis) -> tuple[int, int]:
    """(calls, usec) of EVALSHA so far."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def measure(client: redis.Redis, action: Callable[[], object], calls: int) -> tuple[float, float]:
    """(Redis µs per call, Python CPU µs per call) over `calls` calls, best of three rounds."""
    action()
    best_redis, best_python = float("inf"), float("inf")
    for _ in range(3):
        before_calls, before_usec = evalsha_stats(client)
        started = time.process_time()
        for _ in range(calls):
            action()
        python = (time.process_time() - started) * 1e6 / calls
        after_calls, after_usec = evalsha_stats(client)
        best_redis = min(best_redis, (after_usec - before_usec) / max(1, after_calls - before_calls))
        best_python = min(best_python, python)
    return best_redis, best_python


def verdicts(single_us: float, same_us: float, spread_us: float) -> str:
    """The issue-14 verdicts of one algorithm's Redis figures."""
    return (
        f"{'':>16}   single {at_most(single_us, REDIS_US_PER_CHECK)}, {per_core(single_us)}"
        f" | per batch decision: same keys {same_us:.1f} µs {at_most(same_us, REDIS_US_PER_BATCH_DECISION)},"
        f" 100 customers {spread_us:.1f} µs {at_most(spread_us, REDIS_US_PER_BATCH_DECISION)}"
    )


def main() -> int:
    """Print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="single checks per round (batches: / 20)")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--period-s", type=int, default=1, help="the limits' period (60+: durable, recorded)")
    parser.add_argument("--not-durable", action="store_true", help="limits of 60 s+ without their records")
    parser.add_argument("--audit", action="store_true", help="log every decision (issue 17's decision log)")
    arguments = parser.parse_args()
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    prefix = f"bench-cost-{uuid.uuid4().hex[:8]}"
    store = RedisStore(client, prefix)
    store.load_scripts()
    raw = client.register_script("return 1")
    try:
        redis_us, python_us = measure(client, lambda: raw(keys=[f"{prefix}:raw"]), arguments.calls)
        print(f"{'raw EVALSHA':>16} | single: redis {redis_us:6.1f} µs  python {python_us:6.1f} µs")
        for algorithm in arguments.algorithms.split(","):
            limits = three_limits(algorithm, arguments.period_s, durable=not arguments.not_durable)
            limits = [dataclasses.replace(spec, audit=arguments.audit) for spec in limits]
            check = CheckItem("acct-1", "PutRecords", resource="shard-1", ip="10.0.0.1")
            same = [(check, limits)] * 100
            spread = [
                (CheckItem(f"acct-{n}", "PutRecords", resource="shard-1", ip="10.0.0.1"), limits) for n in range(100)
            ]
            single = measure(client, lambda c=check, s=limits: store.check(c, s), arguments.calls)
            batches = max(5, arguments.calls // 20)
            batch = measure(client, lambda p=same: store.check_batch(p), batches)
            wide = measure(client, lambda p=spread: store.check_batch(p), batches)
            print(
                f"{algorithm:>16} | single: redis {single[0]:6.1f} µs  python {single[1]:6.1f} µs"
                f" | batch100 same: redis {batch[0]:7.0f} µs  python {batch[1]:6.0f} µs"
                f" | batch100 spread: redis {wide[0]:7.0f} µs  python {wide[1]:6.0f} µs"
            )
            print(verdicts(single[0], batch[0] / 100, wide[0] / 100))
    finally:
        delete_prefix(client, prefix)
    return 0


def delete_prefix(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


if __name__ == "__main__":
    sys.exit(main())
