"""Adding counts into UsageMinute rows, whoever else adds into the same rows at the same time.

The flush (from the counter store) and the decisions made without it (decisions.py) both add here. Rows
are added by INSERT ... ON CONFLICT DO UPDATE, which adds every counter and merges `costs` unit by unit in
the database: atomic per row with no read before the write. On PostgreSQL the rows are first COPYed into a
temporary staging table, then added by one INSERT ... SELECT (a minute of 100,000 pairs is one COPY and one
statement, bench/usage/flush.py); on SQLite (the embedded default) by multi-row INSERT statements of
ROWS_PER_STATEMENT rows. A row is one customer x operation x bucket x calling service x API key (UNIQUE_FIELDS,
the tables' unique constraint). Rows are written in one order, UNIQUE_FIELDS', so two writers never wait for
each other's rows in opposite orders (a deadlock): on PostgreSQL the INSERT sorts them itself, in the
database's collation, the same for every writer.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable

from django.db import connection, transaction

from apps.usage.models import UNIQUE_FIELDS, UsageBucket, UsageMinute
from apps.usage.vocabulary import AMOUNTS

__all__ = ["add_into", "merged_minutes", "usage_minutes_add"]
COLUMNS = (*UNIQUE_FIELDS, *AMOUNTS, "costs")
KEY = ", ".join(UNIQUE_FIELDS)
# Rows per statement: 14 parameters each, well under SQLite's and PostgreSQL's parameter limits.
ROWS_PER_STATEMENT = 500

UPSERT_SQL = "INSERT INTO {table} ({columns}) VALUES {values} ON CONFLICT ({key}) DO UPDATE SET {sums}, costs = {costs}"
# PostgreSQL: the staging table lives until the transaction ends (usage_minutes_add always runs in one), so
# nothing is left on a pooled connection; text columns, so an over-long name is refused by the INSERT below
# (a DataError the quarantine sifts) like by the VALUES statement.
STAGING = "usage_minute_staging"
STAGING_SQL = (
    f"CREATE TEMPORARY TABLE IF NOT EXISTS {STAGING} (customer text, operation text, bucket timestamptz, "
    "service text, api_key text, " + ", ".join(f"{name} bigint" for name in AMOUNTS) + ", costs jsonb) ON COMMIT DROP"
)
STAGED_UPSERT_SQL = (
    "INSERT INTO {table} ({columns}) SELECT {columns} FROM usage_minute_staging ORDER BY {key} "
    "ON CONFLICT ({key}) DO UPDATE SET {sums}, costs = {costs}"
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
    """target += source: the counters and session time, and the costs unit by unit."""
    for name in AMOUNTS:
        setattr(target, name, getattr(target, name) + getattr(source, name))
    costs = dict(target.costs)
    for unit, amount in source.costs.items():
        costs[unit] = costs.get(unit, 0) + amount
    target.costs = costs


def merged_minutes(rows: Iterable[UsageMinute]) -> list[UsageMinute]:
    """One row per UNIQUE_FIELDS, summed, in that order (one statement may not touch a row twice)."""
    merged: dict[tuple[str, str, dt.datetime, str, str], UsageMinute] = {}
    summed: set[tuple[str, str, dt.datetime, str, str]] = set()
    for row in rows:
        key = (row.customer, row.operation, row.bucket, row.service, row.api_key)
        held = merged.get(key)
        if held is None:
            # Kept as it is unless the key comes again: a model built per row was a third of a 100k-row flush.
            merged[key] = row
            continue
        if key not in summed:  # the sum goes into a new row, never into one of the caller's
            merged[key] = UsageMinute(
                customer=row.customer,
                operation=row.operation,
                bucket=row.bucket,
                service=row.service,
                api_key=row.api_key,
                costs={},
            )
            add_into(merged[key], held)
            summed.add(key)
        add_into(merged[key], row)
    return [merged[key] for key in sorted(merged)]


def usage_minutes_add(*, rows: Iterable[UsageMinute]) -> int:
    """Add `rows` (unsaved UsageMinute objects) into the stored ones, creating those missing; how many rows.

    Each row is added atomically; the caller's transaction, if any, makes the whole set atomic.
    """
    merged = merged_minutes(rows)
    if connection.vendor == "postgresql":
        _copy_and_add(merged)
        return len(merged)
    concrete = {field.name: field for field in UsageMinute._meta.concrete_fields}
    fields = [concrete[name] for name in COLUMNS]
    table = connection.ops.quote_name(UsageMinute._meta.db_table)
    for start in range(0, len(merged), ROWS_PER_STATEMENT):
        chunk = merged[start : start + ROWS_PER_STATEMENT]
        params = [field.get_db_prep_save(getattr(row, field.attname), connection) for row in chunk for field in fields]
        with connection.cursor() as cursor:
            cursor.execute(_upsert_sql(table, len(chunk)), params)
    return len(merged)


def _copy_and_add(rows: list[UsageMinute]) -> None:
    """PostgreSQL: COPY `rows` into the staging table, then add them all with one INSERT ... SELECT.

    psycopg's errors inside COPY are not Django's: wrap_database_errors turns them into Django's (DataError
    for a NUL byte), which the quarantine recognizes. The savepoint undoes a refused batch alone.
    """
    if not rows:
        return
    table = connection.ops.quote_name(UsageMinute._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.execute(STAGING_SQL)
        # An earlier call in the same transaction (the quarantine probes parts of a batch) left its rows.
        cursor.execute(f"TRUNCATE {STAGING}")
        with cursor.copy(f"COPY {STAGING} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                counts = [getattr(row, name) for name in AMOUNTS]
                key = [row.customer, row.operation, row.bucket, row.service, row.api_key]
                copy.write_row([*key, *counts, json.dumps(row.costs)])
        cursor.execute(_upsert_sql(table, 0, STAGED_UPSERT_SQL))


def _upsert_sql(table: str, rows: int, template: str = UPSERT_SQL) -> str:
    placeholders = "(" + ", ".join(["%s"] * len(COLUMNS)) + ")"
    return template.format(
        table=table,
        columns=", ".join(COLUMNS),
        key=KEY,
        values=", ".join([placeholders] * rows),
        sums=", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in AMOUNTS),
        costs=COSTS_SUM[connection.vendor].format(table=table),
    )
