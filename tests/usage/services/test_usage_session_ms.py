"""Session time in usage: the milliseconds leases are held, per customer x operation x minute, flushed from the
store into UsageMinute (a partitioned table on PostgreSQL) and rolled up like the counts."""

import datetime as dt
import time

import pytest
from django.db import connection

from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageHour, UsageMinute
from apps.usage.services import usage_flush
from apps.usage.services.partitions import PARENT, day_create
from apps.usage.services.rollup import usage_rollup

pytestmark = pytest.mark.django_db
MINUTE_MS = 60_000
SLOTS = LimitSpec("slots", "concurrency", 3, key_by=("customer",))


@pytest.fixture
def recent(redis_client, key_prefix):
    """A store whose clock reads 10 minutes ago, on a minute's start: its usage lands in a real partition."""
    clock = ManualClock(start_ms=(int(time.time() * 1000) // MINUTE_MS - 10) * MINUTE_MS)
    return RedisStore(redis_client, key_prefix=key_prefix, clock=clock), clock


def test_every_partition_of_usage_minute_has_the_column() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("partitions are PostgreSQL's")  # the suite runs on PostgreSQL: this never skips there
    day_create(connection, dt.date(2031, 1, 1))  # a partition made after the migration inherits it too
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.attname IS NOT NULL FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'session_ms' AND NOT a.attisdropped "
            "WHERE i.inhparent = %s::regclass",
            [PARENT],
        )
        partitions = dict(cursor.fetchall())
    assert len(partitions) >= 3
    assert all(partitions.values()), partitions


def test_the_flush_carries_the_time_leases_were_held_per_minute(recent) -> None:
    store, clock = recent
    start = clock.now_ms()
    clock.advance(30_000)
    first_lease, second_lease = CheckItem("acct-1", "Export"), CheckItem("acct-2", "Export")
    decision, released, _ = store.lease_acquire(first_lease, SLOTS, 300)  # 30 s .. 120 s, released
    decision_tally(first_lease, [SLOTS], decision)  # as leases/services.py does
    decision, expired, _ = store.lease_acquire(second_lease, SLOTS, 45)  # 30 s .. 75 s, never released
    decision_tally(second_lease, [SLOTS], decision)
    assert released
    assert expired
    clock.advance(90_000)
    store.lease_release(released)
    clock.advance(3 * MINUTE_MS)

    decision_ledger.flush()  # the acquisitions, tallied like checks
    usage_flush(store=store, now_ms=clock.now_ms())  # the session time, booked by the store

    rows = UsageMinute.objects.order_by("bucket", "customer")
    first = dt.datetime.fromtimestamp(start // 1000, tz=dt.UTC)
    minute = dt.timedelta(minutes=1)
    assert [(row.customer, row.bucket - first, row.session_ms) for row in rows] == [
        ("acct-1", 0 * minute, 30_000),
        ("acct-2", 0 * minute, 30_000),
        ("acct-1", 1 * minute, 60_000),
        ("acct-2", 1 * minute, 15_000),
    ]
    assert rows[0].allowed == 1  # the acquire itself, counted like a check
    # The minutes after the release (booked at acquire, given back) hold nothing, and no row was written for them.

    usage_rollup()
    hours: dict[str, int] = {}
    for row in UsageHour.objects.all():  # two hours per customer when the two minutes straddle an hour
        hours[row.customer] = hours.get(row.customer, 0) + row.session_ms
    assert hours == {"acct-1": 90_000, "acct-2": 45_000}
