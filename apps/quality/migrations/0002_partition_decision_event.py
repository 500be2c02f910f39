"""Partition quality_decisionevent by UTC day on PostgreSQL (RANGE on at), as usage 0007 does UsageMinute.

The table is new and empty: it is renamed away, created again LIKE it (columns, NOT NULL and CHECK constraints,
the identity) partitioned by `at`, the old one dropped, then the primary key (id, at), the unique constraint and
the indexes added under the names the model gives them (a partitioned table's primary key and unique
constraints must hold the partition key: the model keeps `id` alone as its primary key, unique by its
identity, and its unique constraint already holds `at`). A DEFAULT partition and yesterday to a few days ahead
are made here; the drain and the purge keep them (services/partitions.py). On SQLite nothing happens.
"""

from django.db import migrations

from apps.quality.services.partitions import DECISION_EVENTS, log_partitions_ensure

TABLE = DECISION_EVENTS.parent
OLD = f"{TABLE}_unpartitioned"
INDEXES = {
    "decision_event_slot_at": "slot, at, entry_id",
    "decision_event_at": "at",
    "decision_event_customer_at": "customer, at",
}


def _rebuild(cursor, partition_by):
    cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {OLD}")
    cursor.execute(
        f"CREATE TABLE {TABLE} (LIKE {OLD} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY) {partition_by}"
    )
    cursor.execute(f"SELECT pg_get_serial_sequence('{TABLE}', 'id')")
    (sequence,) = cursor.fetchone()
    cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {OLD}")
    cursor.execute(f"DROP TABLE {OLD}")  # frees the names of its keys and indexes
    if sequence != f"public.{TABLE}_id_seq":
        cursor.execute(f"ALTER SEQUENCE {sequence} RENAME TO {TABLE}_id_seq")
    cursor.execute(f"SELECT setval('{TABLE}_id_seq', coalesce((SELECT max(id) FROM {TABLE}), 0) + 1, false)")


def _keys(cursor, primary_key):
    cursor.execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY ({primary_key})")
    cursor.execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT decision_event_unique UNIQUE (slot, entry_id, at)")
    for name, columns in INDEXES.items():
        cursor.execute(f"CREATE INDEX {name} ON {TABLE} ({columns})")


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        _rebuild(cursor, "PARTITION BY RANGE (at)")
        _keys(cursor, "id, at")
        cursor.execute(f"CREATE TABLE {DECISION_EVENTS.default} PARTITION OF {TABLE} DEFAULT")
    log_partitions_ensure()


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        _rebuild(cursor, "")
        _keys(cursor, "id")


class Migration(migrations.Migration):
    atomic = True
    dependencies = [
        ("quality", "0001_initial"),
    ]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
