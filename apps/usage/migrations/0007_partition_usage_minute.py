"""Partition usage_usageminute by UTC day on PostgreSQL (native declarative partitioning, RANGE on bucket).

PostgreSQL can only build a primary key or a unique constraint on a partitioned table if it includes the
partition key, so the table's primary key becomes (id, bucket) in SQL while the model keeps `id` as its
primary key: Django only needs `id` unique, and the identity sequence keeps it so. The model's unique
(customer, operation, bucket), which the flush's ON CONFLICT names, already holds `bucket`. Django 5.2's
CompositePrimaryKey would say (id, bucket) in the model too, but it cannot be migrated to on an existing
table, the admin does not support it, and every `pk` lookup would need the bucket: nothing gained.

The conversion: rename the old table away, create the partitioned table LIKE it (columns, NOT NULL and
CHECK constraints, the identity), a DEFAULT partition and one partition per UTC day that has rows (plus
yesterday to a few days ahead), copy the rows, move the identity past the highest id, drop the old table.
It copies every row once, under the migration's lock: minutes of downtime for the flush at tens of
millions of rows. The days ahead are then kept by services/partitions.py (flush, purge, every migrate).

On SQLite (the embedded default) nothing happens: the table stays a plain one and works as before.
Reversible: back to one plain table with the same rows.
"""

import datetime as dt

from django.db import migrations

from apps.usage.services.partitions import DAYS_AHEAD, day_create

TABLE = "usage_usageminute"
OLD = "usage_usageminute_unpartitioned"


def _days(cursor, table):
    cursor.execute(f"SELECT DISTINCT (bucket AT TIME ZONE 'UTC')::date FROM {table}")
    today = dt.datetime.now(dt.UTC).date()
    ahead = {today + dt.timedelta(days=offset) for offset in range(-1, DAYS_AHEAD + 1)}
    return sorted({day for (day,) in cursor.fetchall()} | ahead)


def _set_identity_past(cursor, table):
    cursor.execute(f"SELECT pg_get_serial_sequence('{table}', 'id')")
    (sequence,) = cursor.fetchone()
    cursor.execute(f"SELECT setval('{sequence}', coalesce((SELECT max(id) FROM {table}), 0) + 1, false)")
    return sequence


def _swap_out(cursor):
    """Rename the table away and free the names of its primary key, unique constraint and index."""
    cursor.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
    cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {OLD}")
    cursor.execute(f"ALTER TABLE {OLD} DROP CONSTRAINT {TABLE}_pkey")
    cursor.execute(f"ALTER TABLE {OLD} DROP CONSTRAINT usage_minute_unique")
    cursor.execute("DROP INDEX usage_minute_bucket")


def _swap_in(cursor, key):
    """Copy the rows over, drop the old table, give back the sequence its usual name, add the keys."""
    cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {OLD}")
    sequence = _set_identity_past(cursor, TABLE)
    cursor.execute(f"DROP TABLE {OLD}")
    if sequence != f"public.{TABLE}_id_seq":
        cursor.execute(f"ALTER SEQUENCE {sequence} RENAME TO {TABLE}_id_seq")
    cursor.execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY ({key})")
    cursor.execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT usage_minute_unique UNIQUE (customer, operation, bucket)")
    cursor.execute(f"CREATE INDEX usage_minute_bucket ON {TABLE} (bucket)")


def partition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        _swap_out(cursor)
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY) "
            "PARTITION BY RANGE (bucket)"
        )
        cursor.execute(f"CREATE TABLE {TABLE}_default PARTITION OF {TABLE} DEFAULT")
        for day in _days(cursor, OLD):
            day_create(connection, day)
        _swap_in(cursor, "id, bucket")


def unpartition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        _swap_out(cursor)
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)"
        )
        _swap_in(cursor, "id")


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0006_quarantined_usage"),
    ]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
