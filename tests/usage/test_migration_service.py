"""Migration 0010 on real PostgreSQL, on the day-partitioned minute table: rows counted before it read as service ""
and key "", no table is rewritten (only the unique index is rebuilt), the upsert's new conflict target holds, and
the reverse folds every caller's row back into one per customer x operation x bucket."""

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.usage.models import UsageHour, UsageMinute
from apps.usage.services.minutes import usage_minutes_add
from apps.usage.services.partitions import partitioned

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("usage", "0009_logged")
# 0010 and the migrations after it: the tests read and write with today's models, which have their columns too
# (0012 adds local_denied; an added column with a constant default rewrites no table either).
AFTER = ("usage", "0012_local_denied")
BUCKET = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)


def migrate(target: tuple[str, str]):
    """Migrate the usage app to `target`; the historical apps at that state."""
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.fixture
def at_latest():
    """Whatever a test does, the database ends at the latest migrations again."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def heap_files() -> dict[str, int]:
    """relname -> relfilenode of every usage table and minute partition: a rewritten table gets a new file."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, relfilenode FROM pg_class WHERE relkind = 'r' AND relname LIKE 'usage_usage%%' "
            "AND relname NOT LIKE '%%unpartitioned'"
        )
        return dict(cursor.fetchall())


def constraint(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s", [name])
        return cursor.fetchone()[0]


def test_rows_of_before_read_as_no_service_and_nothing_is_rewritten(at_latest) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the partitioned table is PostgreSQL's")
    old = migrate(BEFORE)
    old.get_model("usage", "UsageMinute").objects.create(
        customer="acct-1", operation="Op", bucket=BUCKET, allowed=7, costs={"requests": 7}
    )
    old.get_model("usage", "UsageHour").objects.create(customer="acct-1", operation="Op", bucket=BUCKET, allowed=7)
    files = heap_files()

    migrate(AFTER)

    after = heap_files()  # 0011 adds a table of its own; none of those that were there is rewritten
    assert {name: after.get(name) for name in files} == files, "adding the columns rewrote no table"
    assert partitioned()
    row = UsageMinute.objects.get()
    assert (row.service, row.api_key, row.allowed) == ("", "", 7)
    assert UsageHour.objects.get().service == ""
    assert constraint("usage_minute_unique") == "UNIQUE (customer, operation, bucket, service, api_key)"
    assert constraint("usage_day_unique") == "UNIQUE (customer, operation, bucket, service, api_key)"


def test_the_upsert_adds_into_its_callers_row_after_the_migration(at_latest) -> None:
    migrate(BEFORE)
    migrate(AFTER)
    rows = [
        UsageMinute(customer="acct-1", operation="Op", bucket=BUCKET, service=service, allowed=1, costs={})
        for service in ("", "ingest", "ingest")
    ]

    usage_minutes_add(rows=rows)
    usage_minutes_add(rows=rows[:2])

    found = UsageMinute.objects.order_by("service").values_list("service", "allowed")
    assert list(found) == [("", 2), ("ingest", 3)]


def test_the_reverse_folds_callers_rows_into_one(at_latest) -> None:
    migrate(AFTER)
    for service, api_key, allowed in (("", "", 1), ("ingest", "qp_1", 2), ("billing", "qp_2", 4)):
        UsageMinute.objects.create(
            customer="acct-1", operation="Op", bucket=BUCKET, service=service, api_key=api_key, allowed=allowed,
            costs={"requests": allowed},
        )  # fmt: skip
    UsageHour.objects.create(customer="acct-2", operation="Op", bucket=BUCKET, service="ingest", allowed=5, costs={})

    old = migrate(BEFORE)

    (minute,) = old.get_model("usage", "UsageMinute").objects.values("customer", "allowed", "costs")
    assert minute == {"customer": "acct-1", "allowed": 7, "costs": {"requests": 7}}
    (hour,) = old.get_model("usage", "UsageHour").objects.values_list("customer", "allowed")
    assert hour == ("acct-2", 5)
    if connection.vendor == "postgresql":
        assert constraint("usage_minute_unique") == "UNIQUE (customer, operation, bucket)"
