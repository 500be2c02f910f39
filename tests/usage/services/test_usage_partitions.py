"""UsageMinute partitioned by UTC day (PostgreSQL): partitions made ahead, DEFAULT catches the rest and is
emptied into new partitions, retention drops whole days, range reads are pruned, the flush stays exactly once."""

import datetime as dt
import threading
import time

import pytest
from django.db import connection, transaction

from apps.engine import ManualClock
from apps.engine.store.redis import RedisStore
from apps.reports.filters import UsageFilters
from apps.reports.selectors import usage_report_rows
from apps.usage.models import FlushedMinute, UsageMinute
from apps.usage.services import usage_flush, usage_purge
from apps.usage.services.minutes import usage_minutes_add
from apps.usage.services.partitions import (
    DAYS_AHEAD,
    DEFAULT_PARTITION,
    PARENT,
    day_create,
    day_partitions,
    partition_name,
    usage_partitions_ensure,
)
from apps.usage.services.rollup import rows_in
from tests.usage.factories import UsageMinuteFactory, spend

MINUTE_MS = 60_000
DAY = dt.timedelta(days=1)


def today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def where_rows_are() -> dict[tuple[str, dt.datetime], str]:
    """(customer, bucket) -> the partition holding the row."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT customer, bucket, tableoid::regclass::text FROM usage_usageminute")
        return {(customer, bucket): table for customer, bucket, table in cursor.fetchall()}


def make_days(*days: dt.date) -> None:
    with transaction.atomic():
        for day in days:
            day_create(connection, day)


def minute_row(customer: str, bucket: dt.datetime, allowed: int = 1) -> UsageMinute:
    return UsageMinute(customer=customer, operation="PutRecords", bucket=bucket, allowed=allowed, costs={})


@pytest.fixture
def recent_engine(redis_client, key_prefix):
    """A Redis store whose clock reads 10 minutes ago: its usage lands in today's (or yesterday's) partition."""
    clock = ManualClock(start_ms=(int(time.time() * 1000) // MINUTE_MS - 10) * MINUTE_MS)
    return RedisStore(redis_client, key_prefix=key_prefix, clock=clock), clock


def test_the_model_names_the_table_the_partition_sql_names() -> None:
    assert UsageMinute._meta.db_table == PARENT


@pytest.mark.django_db
def test_after_migrate_the_table_is_partitioned_with_yesterday_to_days_ahead_and_a_default() -> None:
    days = [partition.day for partition in day_partitions()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s", [PARENT])
        (kind,) = cursor.fetchone()
        cursor.execute("SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = %s", [DEFAULT_PARTITION])
        (bound,) = cursor.fetchone()

    assert kind == "p"
    assert bound == "DEFAULT"
    assert set(days) >= {today() + offset * DAY for offset in range(-1, DAYS_AHEAD + 1)}
    assert usage_partitions_ensure() == []  # nothing missing: a catalog read and no DDL


@pytest.mark.django_db
def test_flushed_rows_land_in_their_day_partition(recent_engine) -> None:
    store, clock = recent_engine
    spend(store, customer="acct-1")
    bucket = dt.datetime.fromtimestamp(clock.now_ms() // MINUTE_MS * 60, tz=dt.UTC)
    clock.advance(3 * MINUTE_MS)

    assert usage_flush(store=store, now_ms=clock.now_ms()).rows == 1
    assert where_rows_are() == {("acct-1", bucket): partition_name(bucket.date())}


@pytest.mark.django_db
def test_a_row_of_a_day_without_partition_waits_in_default_then_moves_to_its_new_partition() -> None:
    lost_day = midnight(dt.date(2026, 1, 1)) + dt.timedelta(hours=13)
    usage_minutes_add(rows=[minute_row("acct-1", lost_day, 3), minute_row("acct-2", lost_day, 4)])
    assert set(where_rows_are().values()) == {DEFAULT_PARTITION}

    created = usage_partitions_ensure(adopt=True)
    usage_minutes_add(rows=[minute_row("acct-1", lost_day, 5)])

    assert created == [partition_name(dt.date(2026, 1, 1))]
    assert set(where_rows_are().values()) == {partition_name(dt.date(2026, 1, 1))}
    assert sorted(UsageMinute.objects.values_list("customer", "allowed")) == [("acct-1", 8), ("acct-2", 4)]


@pytest.mark.django_db
def test_retention_drops_whole_old_days_and_deletes_only_the_expired_part_of_the_cutoff_day(settings) -> None:
    settings.QUOTA_RETENTION_MINUTE_DAYS = 14
    now = midnight(dt.date(2026, 3, 20)) + dt.timedelta(hours=9)
    cutoff = now - 14 * DAY  # 2026-03-06 09:00
    make_days(*(cutoff.date() + offset * DAY for offset in range(-3, 3)))
    rows = {
        "old": UsageMinuteFactory(bucket=cutoff - 2 * DAY),
        "expired_same_day": UsageMinuteFactory(bucket=cutoff - dt.timedelta(hours=1)),
        "kept_same_day": UsageMinuteFactory(bucket=cutoff + dt.timedelta(hours=1)),
        "kept": UsageMinuteFactory(bucket=cutoff + DAY),
        "in_default": UsageMinuteFactory(bucket=cutoff - 30 * DAY),
    }

    usage_purge(now=now)

    kept = {row.bucket for name, row in rows.items() if name.startswith("kept")}
    assert set(UsageMinute.objects.values_list("bucket", flat=True)) == kept
    left = {partition.day for partition in day_partitions()}
    assert {cutoff.date() - offset * DAY for offset in (1, 2, 3)}.isdisjoint(left)  # dropped, not emptied
    assert {cutoff.date(), cutoff.date() + DAY, cutoff.date() + 2 * DAY} <= left
    assert {now.date() + offset * DAY for offset in range(DAYS_AHEAD + 1)} <= left  # made ahead by the purge


def plan(queryset) -> str:
    return queryset.explain()


@pytest.mark.django_db
def test_a_rollup_and_an_export_over_a_range_read_only_the_partitions_in_it() -> None:
    day = today()
    hour = midnight(day) + dt.timedelta(hours=5)
    others = [partition.name for partition in day_partitions() if partition.day != day]

    for shown in (
        plan(rows_in(UsageMinute, hour, hour + dt.timedelta(hours=1))),
        plan(usage_report_rows(filters=UsageFilters("minute", hour, hour + dt.timedelta(hours=3)))),
    ):
        assert partition_name(day) in shown
        assert others
        assert not [name for name in [*others, DEFAULT_PARTITION] if name in shown], shown

    two_days = plan(rows_in(UsageMinute, midnight(day) - DAY, midnight(day) + DAY))
    assert partition_name(day - DAY) in two_days
    assert partition_name(day + DAY) not in two_days


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["claimed", "added", "committed"])
def test_a_flush_into_a_day_partition_retried_after_a_crash_counts_once(recent_engine, step) -> None:
    store, clock = recent_engine
    for _ in range(3):
        spend(store, customer="acct-1")
    clock.advance(3 * MINUTE_MS)

    def crash(reached, minute):
        if reached == step:
            raise RuntimeError(step)

    with pytest.raises(RuntimeError):
        usage_flush(store=store, now_ms=clock.now_ms(), checkpoint=crash)
    usage_flush(store=store, now_ms=clock.now_ms())

    assert list(UsageMinute.objects.values_list("customer", "allowed")) == [("acct-1", 3)]
    assert FlushedMinute.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_flushers_racing_on_a_day_partition_count_each_pair_once(recent_engine) -> None:
    store, clock = recent_engine
    for index in range(200):
        spend(store, customer=f"acct-{index}")
    clock.advance(3 * MINUTE_MS)
    both_read = threading.Barrier(2, timeout=20)
    reports, errors = [], []

    def run():
        try:
            checkpoint = lambda step, minute: step == "read" and both_read.wait()  # noqa: E731
            reports.append(usage_flush(store=store, now_ms=clock.now_ms(), checkpoint=checkpoint))
        except Exception as error:  # reported by the assertion below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert sorted(r.rows for r in reports) == [0, 200]
    assert UsageMinute.objects.count() == 200
    assert set(UsageMinute.objects.values_list("allowed", flat=True)) == {1}
    assert len(set(where_rows_are().values())) == 1
    assert DEFAULT_PARTITION not in where_rows_are().values()
