"""Bytes per usage row in PostgreSQL (minute, hour and day tables, indexes included), for docs/capacity.md.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/cluster/usage_rows.py [--rows 100000]

Migrates the database of DATABASE_URL (tests/testenv.py provides a throwaway one), fills UsageMinute (partitioned
by day: the partitions' sizes are summed), UsageHour and UsageDay with `--rows` rows each shaped like the flush
writes them (12-character customer, 14-character operation, allowed/denied set, costs {"requests": n}), runs
ANALYZE, and prints pg_total_relation_size per row (heap, unique index, bucket index, TOAST) and the average
pg_column_size of a row. Deletes its rows at the end. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
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

from apps.usage.models import UsageDay, UsageHour, UsageMinute  # noqa: E402

OPERATIONS = 100
CHUNK = 5000


def rows_of(model: type, count: int, step: dt.timedelta) -> list:
    start = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    pairs = max(1, count // 10)  # ten buckets of `pairs` customer x operation pairs
    return [
        model(
            customer=f"tenant-{(n % pairs) // OPERATIONS:05d}",
            operation=f"Operation{(n % pairs) % OPERATIONS:05d}",
            bucket=start + (n // pairs) * step,
            allowed=1 + n % 500,
            denied=n % 3,
            costs={"requests": 1 + n % 500},
        )
        for n in range(count)
    ]


def total_bytes(table: str) -> int:
    """Table + indexes + TOAST, summed over the partitions of a partitioned table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size(%s::regclass) + coalesce(sum(pg_total_relation_size(inhrelid)), 0)"
            " FROM pg_inherits WHERE inhparent = %s::regclass",
            [table, table],
        )
        return int(cursor.fetchone()[0])


def average_row(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT avg(pg_column_size(t.*)) FROM {table} t")  # noqa: S608 - our own table names
        return float(cursor.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    arguments = parser.parse_args()
    call_command("migrate", verbosity=0)
    print("| table | rows | total bytes (heap + indexes) | bytes per row | average row (pg_column_size) |")
    print("|---|---|---|---|---|")
    steps = {UsageMinute: dt.timedelta(minutes=1), UsageHour: dt.timedelta(hours=1), UsageDay: dt.timedelta(days=1)}
    for model, step in steps.items():
        table = model._meta.db_table
        empty = total_bytes(table)
        rows = rows_of(model, arguments.rows, step)
        for start in range(0, len(rows), CHUNK):
            model.objects.bulk_create(rows[start : start + CHUNK])
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {table}")
        used = total_bytes(table) - empty
        print(f"| {table} | {len(rows):,} | {used:,} | {used / len(rows):,.0f} | {average_row(table):,.0f} |")
        model.objects.filter(customer__startswith="tenant-").delete()


if __name__ == "__main__":
    main()
