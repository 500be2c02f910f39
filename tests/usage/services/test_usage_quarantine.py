"""A usage row PostgreSQL refuses on its own (a NUL byte, a name too long) is quarantined; the flush and the
ledger write the others, exactly once, and never stumble on it again. Real Redis and PostgreSQL: the poisoned
row is written into Redis below the API, with the engine's own key layout."""

import datetime as dt

import pytest
from django.db import OperationalError, connection
from prometheus_client import REGISTRY

from apps.common.quarantine import key_shown
from apps.engine.keys import KeyLayout
from apps.usage.models import FlushedMinute, QuarantinedUsage, UsageMinute
from apps.usage.services import usage_flush, usage_purge
from tests.admin_fixtures import admin_url
from tests.usage.factories import spend

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000
STEPS = ["read", "claimed", "added", "committed", "discarded"]
NUL_CUSTOMER = "a\x00b"


class Killed(Exception):
    """Stands for the worker dying at a checkpoint."""


def quarantined_total(writer: str) -> float:
    return REGISTRY.get_sample_value("quota_rows_quarantined_total", {"writer": writer}) or 0.0


def poison(redis_client, key_prefix, minute, customer=NUL_CUSTOMER, operation="PutRecords", costs=None):
    """Usage of `customer` × `operation` in `minute`, as a check would have left it in Redis."""
    layout = KeyLayout(key_prefix)
    key = layout.usage_key(customer, operation, minute)
    fields = {"allowed": 3, "denied": 1, **{f"cost:{unit}": amount for unit, amount in (costs or {}).items()}}
    redis_client.hset(key, mapping=fields)
    redis_client.sadd(layout.usage_index_key(minute), key)
    return (customer, operation, minute)


def totals():
    rows = UsageMinute.objects.order_by("bucket", "customer", "operation")
    return [(r.customer, r.operation, r.bucket, r.allowed, r.denied, r.costs) for r in rows]


@pytest.fixture
def poisoned_minutes(engine, clock, redis_client, key_prefix):
    """acct-1 (twice) and acct-2 beside a customer holding a NUL byte in the first minute, acct-1 in the
    next; then time moves on. Returns (the poisoned key, the good rows expected in PostgreSQL)."""
    minute = clock.now_ms() // MINUTE_MS
    first = dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC)
    spend(engine, customer="acct-1", costs={"records": 10})
    spend(engine, customer="acct-1", costs={"records": 20})
    spend(engine, customer="acct-2", operation="GetRecords")
    key = poison(redis_client, key_prefix, minute, costs={"requests": 3})
    clock.advance(MINUTE_MS)
    spend(engine, customer="acct-1", costs={"records": 5})
    clock.advance(3 * MINUTE_MS)
    second = first + dt.timedelta(minutes=1)
    return key, [
        ("acct-1", "PutRecords", first, 2, 0, {"records": 30, "requests": 2}),
        ("acct-2", "GetRecords", first, 1, 0, {"requests": 1}),
        ("acct-1", "PutRecords", second, 1, 0, {"records": 5, "requests": 1}),
    ]


def test_a_poisoned_row_cannot_block_the_flush_of_the_others(engine, clock, poisoned_minutes, caplog) -> None:
    key, good = poisoned_minutes
    before = quarantined_total("usage_flush")

    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert totals() == good
    assert (report.minutes, report.rows, report.quarantined, report.quarantined_keys) == (2, 3, 1, (repr(key),))
    assert "1 row quarantined" in report.summary
    assert repr(key) in report.summary
    held = QuarantinedUsage.objects.get()
    assert (held.writer, held.minute, held.key) == ("usage_flush", key[2], repr(key))
    assert "allowed=3, denied=1" in held.row
    assert "'requests': 3" in held.row
    assert "NUL" in held.error
    assert FlushedMinute.objects.get(minute=key[2]).rows == 2, "the claim counts the rows added"
    assert quarantined_total("usage_flush") == before + 1
    assert repr(key) in caplog.text
    assert engine.usage_minutes() == [], "the poisoned minute left Redis with the others"

    again = usage_flush(store=engine, now_ms=clock.now_ms())

    assert (again.minutes, again.quarantined) == (0, 0)
    assert totals() == good
    assert QuarantinedUsage.objects.count() == 1
    assert quarantined_total("usage_flush") == before + 1


@pytest.mark.parametrize(
    ("customer", "operation", "costs", "error"),
    [
        ("acct-9", "Put\x00Records", {}, "NUL"),
        ("acct-9", "PutRecords", {"rec\x00ords": 4}, "Unicode escape"),  # jsonb refuses the escape of a NUL
        ("a" * 201, "PutRecords", {}, "too long"),
    ],
    ids=["nul-in-operation", "nul-in-a-cost-unit", "customer-too-long"],
)
def test_every_kind_of_row_the_database_refuses_is_quarantined(
    engine, clock, redis_client, key_prefix, customer, operation, costs, error
) -> None:
    minute = clock.now_ms() // MINUTE_MS
    spend(engine, customer="acct-1")
    key = poison(redis_client, key_prefix, minute, customer, operation, costs)
    spend(engine, customer="acct-2")
    clock.advance(2 * MINUTE_MS)

    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert (report.rows, report.quarantined_keys) == (2, (key_shown(key),)), "a long key is cut in the report"
    assert sorted(UsageMinute.objects.values_list("customer", "allowed")) == [("acct-1", 1), ("acct-2", 1)]
    assert error in QuarantinedUsage.objects.get(key=repr(key)).error


def test_many_poisoned_rows_are_all_quarantined_and_the_summary_names_the_first_ten(
    engine, clock, redis_client, key_prefix
) -> None:
    minute = clock.now_ms() // MINUTE_MS
    keys = sorted(poison(redis_client, key_prefix, minute, f"bad-{n:02}\x00") for n in range(12))
    for n in range(5):
        spend(engine, customer=f"acct-{n}")
    clock.advance(2 * MINUTE_MS)

    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert (report.rows, report.quarantined) == (5, 12)
    assert report.quarantined_keys == tuple(repr(key) for key in keys[:10])
    assert report.summary.endswith(" and 2 more")
    assert UsageMinute.objects.count() == 5
    assert QuarantinedUsage.objects.count() == 12


@pytest.mark.parametrize("step", STEPS)
def test_a_flush_killed_while_quarantining_then_run_again_quarantines_once(
    engine, clock, poisoned_minutes, step
) -> None:
    key, good = poisoned_minutes
    before = quarantined_total("usage_flush")
    seen: list[tuple[str, int]] = []

    def kill_in_the_sifting_run(reached, minute):
        # The first "claimed" of the poisoned minute is the plain attempt; the second is the sifting one.
        seen.append((reached, minute))
        if reached == step and minute == key[2] and (step != "claimed" or seen.count(("claimed", minute)) == 2):
            raise Killed(step)

    with pytest.raises(Killed):
        usage_flush(store=engine, now_ms=clock.now_ms(), checkpoint=kill_in_the_sifting_run)
    usage_flush(store=engine, now_ms=clock.now_ms())

    assert totals() == good
    assert QuarantinedUsage.objects.filter(key=repr(key)).count() == 1
    assert quarantined_total("usage_flush") == before + 1, "counted when committed, and only then"
    assert engine.usage_minutes() == []
    assert FlushedMinute.objects.get(minute=key[2]).rows == 2


def test_a_transient_failure_while_sifting_quarantines_nothing_and_the_next_run_does(
    engine, clock, poisoned_minutes
) -> None:
    """The database busy (a lock held elsewhere past lock_timeout) is no reason to set a row aside."""
    key, good = poisoned_minutes
    before = quarantined_total("usage_flush")
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.execute(f"LOCK TABLE {UsageMinute._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '300ms'")
        with pytest.raises(OperationalError):
            usage_flush(store=engine, now_ms=clock.now_ms())
    finally:
        other.rollback()
        other.close()

    assert QuarantinedUsage.objects.count() == 0
    assert quarantined_total("usage_flush") == before
    assert FlushedMinute.objects.count() == 0
    assert len(engine.usage_minutes()) == 2, "both minutes wait in Redis for the next run"

    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert (report.rows, report.quarantined) == (3, 1)
    assert totals() == good
    assert quarantined_total("usage_flush") == before + 1


def test_the_quarantine_can_be_read_in_the_admin_but_not_edited(admin_client, engine, clock, poisoned_minutes) -> None:
    key, _ = poisoned_minutes
    usage_flush(store=engine, now_ms=clock.now_ms())
    held = QuarantinedUsage.objects.get()

    listing = admin_client.get(admin_url(QuarantinedUsage, "changelist"))
    assert listing.status_code == 200
    assert "a\\x00b" in listing.content.decode()
    assert admin_client.get(admin_url(QuarantinedUsage, "change", held.pk)).status_code == 200
    assert admin_client.get(admin_url(QuarantinedUsage, "add")).status_code == 403
    assert admin_client.post(admin_url(QuarantinedUsage, "change", held.pk), {"key": "x"}).status_code == 403
    held.refresh_from_db()
    assert held.key == repr(key)


def test_quarantined_rows_are_purged_with_the_minute_retention(settings) -> None:
    settings.QUOTA_RETENTION_MINUTE_DAYS = 14
    now = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    old, recent = (QuarantinedUsage.objects.create(writer="usage_flush", minute=1, key="k", row="r", error="e")
                   for _ in range(2))  # fmt: skip
    QuarantinedUsage.objects.filter(pk=old.pk).update(quarantined_at=now - dt.timedelta(days=15))
    QuarantinedUsage.objects.filter(pk=recent.pk).update(quarantined_at=now - dt.timedelta(days=13))

    assert usage_purge(now=now)["quarantined_usage"] == 1
    assert list(QuarantinedUsage.objects.values_list("pk", flat=True)) == [recent.pk]
