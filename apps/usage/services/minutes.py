"""Adding counts into UsageMinute rows, whoever else adds into the same rows at the same time.

The flush (from the counter store) and the decisions made without it (decisions.py) both add here. Each
row is one INSERT ... ON CONFLICT DO UPDATE that adds every counter, and merges `costs` unit by unit, in
the database: atomic per row with no read before the write, on PostgreSQL and on SQLite (the embedded
default) alike. Rows are written in one order, (customer, operation, bucket), so two writers never wait
for each other's rows in opposite orders (a deadlock).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import connection

from apps.usage.models import COUNTERS, UsageBucket, UsageMinute

__all__ = ["COUNTERS", "add_into", "merged_minutes", "usage_minutes_add"]
COLUMNS = ("customer", "operation", "bucket", *COUNTERS, "costs")
# Rows per statement: 10 parameters each, well under SQLite's and PostgreSQL's parameter limits.
ROWS_PER_STATEMENT = 500

UPSERT_SQL = (
    "INSERT INTO {table} ({columns}) VALUES {values} "
    "ON CONFLICT (customer, operation, bucket) DO UPDATE SET {sums}, costs = {costs}"
)
# costs = stored + incoming, unit by unit (JSON objects of integers). The common cases, one side empty,
# skip the merge.
COSTS_SUM = {
    "postgresql": (
        "CASE WHEN excluded.costs = '{{}}'::jsonb THEN {table}.costs WHEN {table}.costs = '{{}}'::jsonb "
        "THEN excluded.costs ELSE (SELECT jsonb_object_agg(unit, total) FROM (SELECT key AS unit, "
        "sum(value::numeric) AS total FROM (SELECT key, value FROM jsonb_each_text({table}.costs) UNION ALL "
        "SELECT key, value FROM jsonb_each_text(excluded.costs)) AS parts GROUP BY key) AS sums) END"
    ),
    "sqlite": (
        "CASE WHEN excluded.costs = '{{}}' THEN {table}.costs WHEN {table}.costs = '{{}}' THEN excluded.costs "
        "ELSE (SELECT json_group_object(unit, total) FROM (SELECT key AS unit, sum(value) AS total FROM "
        "(SELECT key, value FROM json_each({table}.costs) UNION ALL SELECT key, value FROM "
        "json_each(excluded.costs)) GROUP BY key)) END"
    ),
}


def add_into(target: UsageBucket, source: UsageBucket) -> None:
    """target += source: the counters, and the costs unit by unit."""
    for name in COUNTERS:
        setattr(target, name, getattr(target, name) + getattr(source, name))
    costs = dict(target.costs)
    for unit, amount in source.costs.items():
        costs[unit] = costs.get(unit, 0) + amount
    target.costs = costs


def merged_minutes(rows: Iterable[UsageMinute]) -> list[UsageMinute]:
    """One row per (customer, operation, bucket), summed, in that order (one statement may not touch a row twice)."""
    merged: dict[tuple[str, str, dt.datetime], UsageMinute] = {}
    for row in rows:
        key = (row.customer, row.operation, row.bucket)
        held = merged.get(key)
        if held is None:
            merged[key] = UsageMinute(customer=row.customer, operation=row.operation, bucket=row.bucket, costs={})
            held = merged[key]
        add_into(held, row)
    return [merged[key] for key in sorted(merged)]


def usage_minutes_add(*, rows: Iterable[UsageMinute]) -> int:
    """Add `rows` (unsaved UsageMinute objects) into the stored ones, creating those missing; how many rows.

    Each row is added atomically; the caller's transaction, if any, makes the whole set atomic.
    """
    merged = merged_minutes(rows)
    concrete = {field.name: field for field in UsageMinute._meta.concrete_fields}
    fields = [concrete[name] for name in COLUMNS]
    table = connection.ops.quote_name(UsageMinute._meta.db_table)
    for start in range(0, len(merged), ROWS_PER_STATEMENT):
        chunk = merged[start : start + ROWS_PER_STATEMENT]
        params = [field.get_db_prep_save(getattr(row, field.attname), connection) for row in chunk for field in fields]
        with connection.cursor() as cursor:
            cursor.execute(_upsert_sql(table, len(chunk)), params)
    return len(merged)


def _upsert_sql(table: str, rows: int) -> str:
    placeholders = "(" + ", ".join(["%s"] * len(COLUMNS)) + ")"
    return UPSERT_SQL.format(
        table=table,
        columns=", ".join(COLUMNS),
        values=", ".join([placeholders] * rows),
        sums=", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in COUNTERS),
        costs=COSTS_SUM[connection.vendor].format(table=table),
    )
