"""Counter records (CounterRecord): what checks spent on durable counters, kept so a counter lost with Redis can
be rebuilt (apps/engine/durability.py). The flush adds the records it finds in the store's usage; the
`database` failure policy adds what it admits while Redis is away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from django.conf import settings
from django.db import connection

from apps.engine.store.base import Records
from apps.usage.models import CounterRecord

# Additive and atomic per row, whoever else adds to it at the same time (another flush, the fallback policy).
UPSERT_SQL = (
    "INSERT INTO {table} (counter, start_ms, until_ms, amount) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (counter, start_ms) DO UPDATE SET amount = {table}.amount + excluded.amount"
)
# How long after its bucket a record may matter when its limit is not known (QUOTA_COUNTER_RECORD_DAYS).
Reach = Callable[[str], int]


def counter_records_add(*, records: Mapping[tuple[str, int], int], reach: Reach | None = None) -> int:
    """Add `records` ((counter, bucket start ms) -> amount) to the stored ones; how many rows. `reach(counter)`:
    how long after its bucket a counter's record can matter (the rest of its window, its log, its bucket's
    drain), by default the longest a durable limit may reach.

    Rows are written in one order (counter, start) so concurrent writers cannot deadlock on each other.
    """
    reach = reach or _longest_reach
    rows = [
        (counter, start, start + reach(counter), amount)
        for (counter, start), amount in sorted(records.items())
        if amount
    ]
    if rows:
        table = connection.ops.quote_name(CounterRecord._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(UPSERT_SQL.format(table=table), rows)
    return len(rows)


def _longest_reach(counter: str) -> int:
    return int(settings.QUOTA_COUNTER_RECORD_DAYS * 86_400_000)


def merged_records(rows: list[Records]) -> Records:
    """The sum of several rows' records."""
    total: Records = {}
    for records in rows:
        for key, amount in records.items():
            total[key] = total.get(key, 0) + amount
    return total
