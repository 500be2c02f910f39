"""The warm-up after Redis comes up empty (counters/warm_up.py): how long 100,000 durable counters take.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/durability/warm_start.py [--counters 100000]

On the migrated throwaway database and Redis tests/testenv.py provides (DATABASE_URL, REDIS_URL): four durable
limits (a daily calendar quota, 1-hour fixed window, sliding log and token bucket, keyed by customer), records for
counters/4 customers each (a window counter one row, a log or a bucket one row per minute for 3 minutes), as the
flush leaves them. Redis starts empty; the warm-up runs once and prints counters/s and seconds. Then EVALSHA in
INFO commandstats: a check on a customer without records after the warm-up, and the same before one (the
per-counter seeding: two script calls). Everything it made is deleted at the end. Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ENV_FILE", "")

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from apps.enforcement.counters.seeding import usage_seeds  # noqa: E402
from apps.enforcement.counters.warm_up import counters_warm  # noqa: E402
from apps.enforcement.decisions.specs import limit_spec_of  # noqa: E402
from apps.engine import CheckItem  # noqa: E402
from apps.engine.durability import record_bucket  # noqa: E402
from apps.engine.store.plan import plan_item  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from apps.limits.models import Limit, Operation  # noqa: E402
from apps.limits.snapshot_holder import snapshot_current, snapshot_holder_reset  # noqa: E402
from apps.usage.models import CounterRecord  # noqa: E402

PREFIX = "bench-warm"
MINUTE_MS = 60_000
LIMITS = [
    {"name": "bench-daily", "algorithm": "calendar", "quantity": 10_000, "calendar_period": "day"},
    {"name": "bench-hourly", "algorithm": "fixed_window", "quantity": 1000, "period_seconds": 3600},
    {"name": "bench-log", "algorithm": "sliding_log", "quantity": 1000, "period_seconds": 3600},
    {"name": "bench-bucket", "algorithm": "token_bucket", "quantity": 1000, "period_seconds": 3600},
]


def configure() -> list:
    operation = Operation.objects.create(name="BenchWarm")
    for fields in LIMITS:
        Limit.objects.create(operation=operation, key_by=["customer"], **fields)
    snapshot_holder_reset()
    return [limit_spec_of(limit) for limit in snapshot_current().limits_by_operation["BenchWarm"]]


def fill(store: RedisStore, specs: list, customers: int, now: int) -> int:
    """Records of every (customer, limit): what checks spent in the last minutes, as the flush stores it."""
    rows: list[CounterRecord] = []
    for n in range(customers):
        plan = plan_item(store._layout, CheckItem(f"bench-{n:06d}", "BenchWarm"), specs, now)
        for limit in plan.limits:
            minutes = 1 if limit.spec.entry.durability.windowed else 3
            for back in range(minutes):
                at = now - back * MINUTE_MS - 1000
                start = record_bucket(limit.spec, limit.params(at), at)
                rows.append(CounterRecord(counter=limit.counter, start_ms=start, until_ms=now + 86_400_000, amount=2))
    CounterRecord.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {CounterRecord._meta.db_table}")
    return len(rows)


def evalsha_calls(client: redis.Redis) -> int:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0))


def calls_of_a_check(client: redis.Redis, store: RedisStore, specs: list, customer: str) -> int:
    before = evalsha_calls(client)
    store.check(CheckItem(customer, "BenchWarm"), specs)
    return evalsha_calls(client) - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counters", type=int, default=100_000)
    counters = parser.parse_args().counters
    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        raise SystemExit("Run it under tests/testenv.py (a throwaway PostgreSQL and Redis).")
    call_command("migrate", verbosity=0)
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    store = RedisStore(client, PREFIX, seeder=usage_seeds)
    specs = configure()
    try:
        seconds, now = time.perf_counter(), store.warm_writer().now_ms()
        rows = fill(store, specs, counters // len(specs), now)
        print(f"records: {rows} rows for {counters} counters, written in {time.perf_counter() - seconds:.1f} s")

        report = counters_warm(store=store)
        print(f"warm-up: {report.summary}")
        print(f"  {report.counters / report.seconds:,.0f} counters/s, {report.seconds:.2f} s in total")

        store.load_scripts()  # as a running platform has them: a first EVALSHA on a new server answers NOSCRIPT
        after = calls_of_a_check(client, store, specs, "bench-new-after-warm")
        print(f"after the warm-up, a check of {len(specs)} durable limits on new counters: {after} EVALSHA")
        client.delete(store._layout.warm_key())  # the epoch without its mark: as before this change
        # The window counters the warm-up wrote are there (a bucket that drained empty since is not: it is asked for).
        windows = [spec for spec in specs if spec.entry.durability.windowed]
        rebuilt = calls_of_a_check(client, store, windows, "bench-000001")
        client.delete(*store._layout.keys_of_counter(plan_item(store._layout, CheckItem("bench-000002", "BenchWarm"),
                                                                windows[:1], now).limits[0].counter))  # fmt: skip
        lost = calls_of_a_check(client, store, windows[:1], "bench-000002")
        print(f"without the mark: a check of counters that are there: {rebuilt} EVALSHA; of one lost: {lost} EVALSHA")
    finally:
        CounterRecord.objects.filter(counter__contains="{c=bench-").delete()
        Limit.objects.filter(operation__name="BenchWarm").delete()
        Operation.objects.filter(name="BenchWarm").delete()
        keys = list(client.scan_iter(match=f"{PREFIX}:*", count=10_000))
        for start in range(0, len(keys), 10_000):
            client.delete(*keys[start : start + 10_000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
