"""Storage of counter records (usage.CounterRecord): bytes per row and per 1,000 active counters.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/durability/records_size.py [--rows 100000]

Fills the table of a migrated database (DATABASE_URL, which tests/testenv.py provides) with rows named like
real counters (customers `bench-*`, deleted again at the end), measures the table with its indexes
(pg_total_relation_size), and prints what 1,000 counters of a few limits cost: rows written per day (a window
counter writes one row per window, a sliding log or a bucket one per minute it is used in) and rows held at
once (each row is kept for its limit's reach, apps/engine/durability.reach_ms, then purged). Not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ENV_FILE", "")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from apps.engine import LimitSpec  # noqa: E402
from apps.engine.durability import reach_ms  # noqa: E402
from apps.usage.models import CounterRecord  # noqa: E402

DAY_MS, MINUTE_MS = 86_400_000, 60_000
# (what, limit, how long one row covers), each counter used every minute.
LIMITS = [
    ("daily quota", LimitSpec("q", "calendar", 1000, calendar_period="day"), DAY_MS),
    ("1-minute sliding log", LimitSpec("l", "sliding_log", 100, period_s=60), MINUTE_MS),
    ("1-hour fixed window", LimitSpec("w", "fixed_window", 100, period_s=3600), 3_600_000),
    ("1-hour token bucket", LimitSpec("b", "token_bucket", 100, period_s=3600), MINUTE_MS),
]


def counter_name(number: int) -> str:
    """A key like the platform writes: per customer and resource, percent-encoded, without the prefix."""
    return f"c:{{c=bench-{number:05d}}}:cal:modify-shard-count-daily:c=bench-{number:05d}:r=stream-{number % 97}"


def fill(rows: int) -> None:
    start = 1_767_225_600_000
    batch = [
        CounterRecord(
            counter=counter_name(n // 10),
            start_ms=start + (n % 10) * MINUTE_MS,
            until_ms=start + DAY_MS,
            amount=random.randint(1, 500),
        )
        for n in range(rows)
    ]
    CounterRecord.objects.bulk_create(batch, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {CounterRecord._meta.db_table}")


def table_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(%s)", [CounterRecord._meta.db_table])
        return int(cursor.fetchone()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    if connection.vendor != "postgresql":
        raise SystemExit("Run it with DATABASE_URL on PostgreSQL (tests/testenv.py starts one).")
    call_command("migrate", verbosity=0)
    empty = table_bytes()
    try:
        fill(rows)
        per_row = (table_bytes() - empty) / rows
    finally:
        CounterRecord.objects.filter(counter__startswith="c:{c=bench-").delete()
    print(f"{rows:,} rows: {per_row:.0f} bytes per row, table and indexes")
    print("1,000 counters used every minute, each row kept for its limit's reach:")
    for what, spec, row_ms in LIMITS:
        written = 1000 * DAY_MS // row_ms
        held = 1000 * (reach_ms(spec) // row_ms + 1)
        print(f"  {what:22} {written:>10,} rows written per day, {held:>9,} held = {held * per_row / 2**20:6.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
