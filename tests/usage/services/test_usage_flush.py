"""usage_flush: completed minutes move from Redis into UsageMinute exactly once, whatever fails when."""

import datetime as dt
import threading
from collections import Counter

import pytest
from django.db import connection

from apps.enforcement.ledger.pending import decision_ledger
from apps.engine import ManualClock, MemoryStore
from apps.limits.models import Mode
from apps.usage.models import FlushedMinute, UsageMinute
from apps.usage.services import usage_flush
from apps.usage.services.flush import FlushReport
from tests.limits.factories import LimitFactory, OperationFactory
from tests.usage.factories import UsageMinuteFactory, spend

MINUTE_MS = 60_000
STEPS = ["read", "claimed", "added", "committed", "discarded"]


class Killed(Exception):
    """Stands for the worker dying at a checkpoint."""


def kill_at(step):
    def checkpoint(reached, minute):
        if reached == step:
            raise Killed(step)

    return checkpoint


def usage_keys(redis_client, key_prefix):
    return sorted(redis_client.scan_iter(match=f"{key_prefix}:u*"))


def totals():
    rows = UsageMinute.objects.order_by("bucket", "customer", "operation")
    return [(r.customer, r.operation, r.bucket, r.allowed, r.denied, r.shadow_denied, r.costs) for r in rows]


def minute_of(ms):
    return dt.datetime.fromtimestamp(ms // MINUTE_MS * 60, tz=dt.UTC)


@pytest.fixture
def two_minutes_of_usage(engine, clock):
    """acct-1 and acct-2 in the first minute, acct-1 again in the next; then time moves on by 3 minutes."""
    first = minute_of(clock.now_ms())
    for records in (10, 20, 30):
        spend(engine, customer="acct-1", costs={"records": records}, quantity=2)
    spend(engine, customer="acct-2", operation="GetRecords")
    clock.advance(MINUTE_MS)
    spend(engine, customer="acct-1", costs={"records": 5})
    clock.advance(3 * MINUTE_MS)
    second = first + dt.timedelta(minutes=1)
    return [
        ("acct-1", "PutRecords", first, 2, 1, 0, {"records": 30, "requests": 2}),
        ("acct-2", "GetRecords", first, 1, 0, 0, {"requests": 1}),
        ("acct-1", "PutRecords", second, 1, 0, 0, {"records": 5, "requests": 1}),
    ]


def expected_sorted(rows):
    return sorted(rows, key=lambda row: (row[2], row[0], row[1]))


@pytest.mark.django_db
def test_completed_minutes_land_in_postgresql_and_leave_redis(
    engine, clock, two_minutes_of_usage, redis_client, key_prefix
) -> None:
    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert report == FlushReport(minutes=2, rows=3)
    assert totals() == expected_sorted(two_minutes_of_usage)
    assert usage_keys(redis_client, key_prefix) == []
    assert FlushedMinute.objects.count() == 2


@pytest.mark.django_db
def test_the_current_minute_and_the_safety_minute_before_it_stay_in_redis(engine, clock) -> None:
    spend(engine)
    clock.advance(MINUTE_MS)
    spend(engine)

    assert usage_flush(store=engine, now_ms=clock.now_ms() + MINUTE_MS - 1) == FlushReport()
    assert len(engine.usage_minutes()) == 2

    report = usage_flush(store=engine, now_ms=clock.now_ms() + MINUTE_MS)

    assert (report.minutes, len(engine.usage_minutes())) == (1, 1)


@pytest.mark.django_db
def test_a_second_flush_finds_nothing_to_add(engine, clock, two_minutes_of_usage) -> None:
    usage_flush(store=engine, now_ms=clock.now_ms())

    assert usage_flush(store=engine, now_ms=clock.now_ms()) == FlushReport()
    assert totals() == expected_sorted(two_minutes_of_usage)


@pytest.mark.django_db
def test_a_flush_adds_to_a_row_already_there_counters_and_costs_unit_by_unit(engine, clock) -> None:
    bucket = minute_of(clock.now_ms())
    UsageMinuteFactory(
        customer="acct-1",
        bucket=bucket,
        allowed=4,
        denied=1,
        shadow_denied=2,
        degraded=3,
        rule_denied=4,
        unavailable=5,
        costs={"records": 100, "bytes": 7},
    )
    spend(engine, costs={"records": 5})
    clock.advance(2 * MINUTE_MS)

    usage_flush(store=engine, now_ms=clock.now_ms())

    assert totals() == [("acct-1", "PutRecords", bucket, 5, 1, 2, {"records": 105, "bytes": 7, "requests": 1})]
    row = UsageMinute.objects.get()
    assert (row.degraded, row.rule_denied, row.unavailable) == (3, 4, 5), "counts the store does not keep stay"


@pytest.mark.django_db
@pytest.mark.parametrize("step", STEPS)
def test_a_flush_killed_at_any_step_then_run_again_loses_and_doubles_nothing(
    engine, clock, two_minutes_of_usage, redis_client, key_prefix, step
) -> None:
    with pytest.raises(Killed):
        usage_flush(store=engine, now_ms=clock.now_ms(), checkpoint=kill_at(step))

    report = usage_flush(store=engine, now_ms=clock.now_ms())

    assert totals() == expected_sorted(two_minutes_of_usage)
    assert usage_keys(redis_client, key_prefix) == []
    assert FlushedMinute.objects.count() == 2
    # Killed after its commit, the first minute is only discarded by the next run.
    assert report.already_flushed == (1 if step == "committed" else 0)
    assert report.minutes == (1 if step in ("committed", "discarded") else 2)


@pytest.mark.django_db(transaction=True)
def test_two_flushes_at_once_count_every_minute_once(engine, clock, two_minutes_of_usage) -> None:
    # Both runs read each minute before either claims it: the worst interleaving.
    both_read = threading.Barrier(2, timeout=20)
    reports, errors = [], []

    def run():
        try:
            reports.append(
                usage_flush(
                    store=engine, now_ms=clock.now_ms(), checkpoint=lambda step, m: step == "read" and both_read.wait()
                )
            )
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
    assert totals() == expected_sorted(two_minutes_of_usage)
    assert sum(r.minutes for r in reports) == 2
    assert sum(r.lost_race for r in reports) == 2


@pytest.mark.django_db
def test_the_in_process_store_flushes_the_same_way() -> None:
    clock = ManualClock(start_ms=1_767_225_600_000)
    store = MemoryStore(clock=clock)
    spend(store, costs={"records": 3})
    clock.advance(2 * MINUTE_MS)

    assert usage_flush(store=store, now_ms=clock.now_ms()).minutes == 1
    assert totals() == [("acct-1", "PutRecords", minute_of(1_767_225_600_000), 1, 0, 0, {"records": 3, "requests": 1})]
    assert store.usage_minutes() == []


def test_the_report_summary_is_one_line_saying_what_happened() -> None:
    summary = FlushReport(minutes=3, rows=120, already_flushed=0).summary

    assert summary.startswith("flushed 3 minutes, 120 rows; 0 already flushed")
    assert "\n" not in summary


@pytest.mark.django_db
def test_usage_in_postgresql_equals_exactly_what_the_check_api_answered(
    api, engine, clock, redis_client, key_prefix
) -> None:
    operation = OperationFactory(name="PutRecords")
    LimitFactory(name="puts", operation=operation, quantity=5, period_seconds=60, key_by=["customer"])
    LimitFactory(name="puts-watch", operation=operation, quantity=3, mode=Mode.SHADOW, key_by=["customer"])
    expected = Counter()
    for round_ in range(3):
        for number in range(21):
            customer, records = f"acct-{number % 3}", number + round_
            body = {"customer": customer, "operation": "PutRecords", "costs": {"records": records}}
            response = api.post("/api/v1/check", body, format="json")
            assert response.status_code in (200, 429)
            answer = response.json()
            if answer["allowed"]:
                expected[(customer, "allowed")] += 1
                expected[(customer, "records")] += records
                expected[(customer, "shadow_denied")] += any(lim["shadow"] and lim["over"] for lim in answer["limits"])
            else:
                expected[(customer, "denied")] += 1
        clock.advance(40_000)
    clock.advance(2 * MINUTE_MS)

    decision_ledger.flush()  # the one usage path: what this process tallied
    usage_flush(store=engine, now_ms=clock.now_ms())  # finds nothing of these decisions in Redis

    flushed = Counter()
    for row in UsageMinute.objects.all():
        flushed[(row.customer, "allowed")] += row.allowed
        flushed[(row.customer, "denied")] += row.denied
        flushed[(row.customer, "shadow_denied")] += row.shadow_denied
        flushed[(row.customer, "records")] += row.costs.get("records", 0)
    assert +flushed == +expected
    assert expected[("acct-0", "denied")] > 0
    assert expected[("acct-0", "shadow_denied")] > 0
    assert usage_keys(redis_client, key_prefix) == []
