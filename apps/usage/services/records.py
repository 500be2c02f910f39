"""Counter records (CounterRecord): what checks spent on durable counters, kept so a counter lost with Redis can
be rebuilt (apps/engine/durability.py). The flush adds the records it finds in the store's usage; the
`database` failure policy adds what it admits while Redis is away.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import connection

from apps.engine.store.base import Records
from apps.usage.models import CounterRecord

# Additive and atomic per row, whoever else adds to it at the same time (another flush, the fallback policy).
UPSERT_SQL = (
    "INSERT INTO {table} (counter, start_ms, amount) VALUES (%s, %s, %s) "
    "ON CONFLICT (counter, start_ms) DO UPDATE SET amount = {table}.amount + excluded.amount"
)


def counter_records_add(*, records: Mapping[tuple[str, int], int]) -> int:
    """Add `records` ((counter, bucket start ms) -> amount) to the stored ones; how many rows.

    Rows are written in one order (counter, start) so concurrent writers cannot deadlock on each other.
    """
    rows = [(counter, start, amount) for (counter, start), amount in sorted(records.items()) if amount]
    if rows:
        table = connection.ops.quote_name(CounterRecord._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(UPSERT_SQL.format(table=table), rows)
    return len(rows)


def merged_records(rows: list[Records]) -> Records:
    """The sum of several rows' records."""
    total: Records = {}
    for records in rows:
        for key, amount in records.items():
            total[key] = total.get(key, 0) + amount
    return total
