"""Flush of one minute of usage: N active customer x operation pairs from Redis into PostgreSQL.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/usage/flush.py [--pairs 100000] [--rounds 3]
    # the same against another checkout (e.g. the code before issue 15), in a fresh throwaway database:
    .venv/bin/python tests/testenv.py .venv/bin/python bench/usage/flush.py --code /tmp/before

Migrates the database of DATABASE_URL (tests/testenv.py provides a throwaway one), then per round writes one
recent minute of usage into Redis the way check.lua leaves it (one hash per pair under the engine's key layout,
allowed/denied/cost:requests, and the minute's index set), and times the real usage_flush over it: read from
Redis, claim, COPY/INSERT into UsageMinute, commit, discard. Rounds add new minutes to a table that keeps
the earlier ones, as in production. Prints per round the seconds and pairs/s, split into the Redis read and
the database write, and what one flush worker handles per minute. Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path


def _setup(code: Path) -> None:
    sys.path.insert(0, str(code))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("ENV_FILE", "")
    import django

    django.setup()


MINUTE_MS = 60_000
OPERATIONS = 100  # pairs = customers x OPERATIONS
WRITE_CHUNK = 5_000


def prepare(client, layout, minute: int, pairs: int) -> None:
    """One minute of usage for `pairs` customer x operation pairs, as check.lua writes it."""
    pipe = client.pipeline(transaction=False)
    keys = []
    for index in range(pairs):
        customer, operation = f"bench-{index // OPERATIONS}", f"Operation{index % OPERATIONS}"
        key = layout.usage_key(customer, operation, minute)
        keys.append(key)
        allowed = 1 + index % 7
        pipe.hset(key, mapping={"allowed": allowed, "denied": index % 3, "cost:requests": allowed})
        if len(keys) == WRITE_CHUNK:
            pipe.sadd(layout.usage_index_key(minute), *keys)
            pipe.execute()
            keys = []
    if keys:
        pipe.sadd(layout.usage_index_key(minute), *keys)
    pipe.execute()


def flush_round(store, minute: int) -> dict[str, float]:
    """Time usage_flush over `minute` (its only minute waiting): total, Redis read, database write."""
    from apps.usage.services import usage_flush

    marks: dict[str, float] = {}
    start = time.perf_counter()
    report = usage_flush(
        store=store,
        now_ms=(minute + 3) * MINUTE_MS,
        checkpoint=lambda step, _minute: marks.setdefault(step, time.perf_counter()),
    )
    total = time.perf_counter() - start
    return {
        "rows": report.rows,
        "total": total,
        "read": marks["read"] - start,
        "write": marks["committed"] - marks["read"],
    }


def run(pairs: int, rounds: int) -> list[dict[str, float]]:
    import redis
    from django.conf import settings
    from django.core.management import call_command

    from apps.engine.keys import KeyLayout
    from apps.engine.store.redis import RedisStore

    call_command("migrate", verbosity=0)
    client = redis.Redis.from_url(os.environ.get("REDIS_URL") or settings.REDIS_URL)
    prefix = f"bench-flush-{uuid.uuid4().hex[:8]}"
    store, layout = RedisStore(client, key_prefix=prefix), KeyLayout(prefix)
    first = int(time.time() * 1000) // MINUTE_MS - 5 - rounds
    results = []
    try:
        for offset in range(rounds):
            prepare(client, layout, first + offset, pairs)
            results.append(flush_round(store, first + offset))
            shown = results[-1]
            print(
                f"round {offset + 1}: {shown['rows']:.0f} pairs in {shown['total']:.2f} s"
                f" ({shown['rows'] / shown['total']:,.0f} pairs/s; Redis read {shown['read']:.2f} s,"
                f" PostgreSQL write {shown['write']:.2f} s)",
                flush=True,
            )
    finally:
        left = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if left:
            client.delete(*left)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[2], help="checkout to run")
    args = parser.parse_args()
    _setup(args.code.resolve())
    from django.db import connection

    print(f"code: {args.code}; PostgreSQL {connection.cursor().connection.info.server_version}", flush=True)
    results = run(args.pairs, args.rounds)
    median = statistics.median(result["total"] for result in results)
    write = statistics.median(result["write"] for result in results)
    print(
        f"median of {len(results)}: {median:.2f} s per minute of {args.pairs} pairs ({args.pairs / median:,.0f}"
        f" pairs/s, PostgreSQL write {write:.2f} s); one flush worker keeps up with about"
        f" {args.pairs * 60 / median:,.0f} pairs per minute"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
