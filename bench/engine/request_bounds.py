"""The Redis work of the largest request a caller can send where it reports state (issue 23): Redis µs per call.

    REDIS_URL=redis://127.0.0.1:<port>/0 .venv/bin/python bench/engine/request_bounds.py [--others 10000] [--rounds 5]

Against a Redis nobody else calls EVALSHA on (INFO commandstats deltas, the worst of --rounds calls each):
- an allocation resync adding MAX_RESYNC_CHANGES placeholders, and one dropping them, on a concurrency set that
  other customers share and already fill with --others allocations (allocations.lua reads the owner's members by
  rank: the others' count should not matter);
- for comparison, a plain check of 3 limits (the hot path), with its deadline prologue.
Prints one line per case with the µs; not a test (a figure, not an assertion).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem, LimitSpec  # noqa: E402
from apps.engine.lease_terms import MAX_RESYNC_CHANGES  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.engine.run import three_limits  # noqa: E402

SHARED = LimitSpec("pool", "concurrency", 10_000_000, key_by=())


def evalsha_usec(client: redis.Redis) -> tuple[int, int]:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def worst_us(client: redis.Redis, action: Callable[[], object], rounds: int, reset: Callable[[], object]) -> float:
    """The most Redis µs one call of `action` took over `rounds` calls (reset before each, not counted)."""
    worst = 0.0
    for _ in range(rounds):
        reset()
        calls, usec = evalsha_usec(client)
        action()
        after_calls, after_usec = evalsha_usec(client)
        worst = max(worst, (after_usec - usec) / max(1, after_calls - calls))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--others", type=int, default=10_000, help="allocations other customers hold in the set")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    prefix = f"bench-bounds-{uuid.uuid4().hex[:8]}"
    store = RedisStore(client, prefix)
    try:
        for start in range(0, options.others, MAX_RESYNC_CHANGES):
            other = CheckItem(f"other-{start}", "Create")
            store.allocations_set(other, SHARED, min(MAX_RESYNC_CHANGES, options.others - start))
        mine = CheckItem("mine", "Create")
        add = worst_us(
            client,
            lambda: store.allocations_set(mine, SHARED, MAX_RESYNC_CHANGES),
            options.rounds,
            lambda: store.allocations_set(mine, SHARED, 0),
        )
        drop = worst_us(
            client,
            lambda: store.allocations_set(mine, SHARED, 0),
            options.rounds,
            lambda: store.allocations_set(mine, SHARED, MAX_RESYNC_CHANGES),
        )
        limits = three_limits("fixed_window", 60)
        check = worst_us(client, lambda: store.check(CheckItem("c", "Op"), limits), options.rounds, lambda: None)
        print(f"allocation resync adding {MAX_RESYNC_CHANGES} beside {options.others} others': {add:.0f} µs")
        print(f"allocation resync dropping {MAX_RESYNC_CHANGES} beside {options.others} others': {drop:.0f} µs")
        print(f"check of 3 fixed-window limits (for scale): {check:.0f} µs")
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)


if __name__ == "__main__":
    main()
