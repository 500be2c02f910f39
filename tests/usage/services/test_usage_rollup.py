"""usage_rollup: hours and days are recomputed from what lies below them, so reruns and late minutes are safe."""

import datetime as dt
import threading
import time

import pytest
from django.db import connection, transaction

from apps.engine import ManualClock, MemoryStore
from apps.usage.models import FlushedMinute, RollupMark, UsageDay, UsageHour
from apps.usage.services import DecisionCounts, usage_decisions_add, usage_flush, usage_rollup
from apps.usage.services.rollup import ROLLUP_LOCK_ID, RollupReport, _lock
from tests.usage.factories import flushed, minute_number, spend

pytestmark = pytest.mark.django_db

T = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


def rows(model):
    found = model.objects.order_by("bucket", "customer", "operation")
    return [(r.customer, r.operation, r.bucket, r.allowed, r.denied, r.shadow_denied, r.costs) for r in found]


@pytest.fixture
def a_morning():
    """acct-1 in two minutes of 10:00 and one of 11:00; acct-2 once at 10:00 on another operation."""
    flushed(T + dt.timedelta(minutes=1), customer="acct-1", allowed=3, denied=1, shadow_denied=0, costs={"records": 30})
    flushed(T + dt.timedelta(minutes=59), customer="acct-1", allowed=2, denied=0, shadow_denied=1, costs={"bytes": 9})
    flushed(T + dt.timedelta(minutes=1), customer="acct-2", operation="GetRecords", allowed=1, denied=0, costs={})
    flushed(T + dt.timedelta(hours=1), customer="acct-1", allowed=4, denied=4, shadow_denied=0, costs={"records": 1})


def test_minutes_roll_up_into_their_hours_and_hours_into_their_day(a_morning) -> None:
    report = usage_rollup()

    assert report == RollupReport(minutes=3, hours=2, days=1, pending=0)
    assert rows(UsageHour) == [
        ("acct-1", "PutRecords", T, 5, 1, 1, {"records": 30, "bytes": 9}),
        ("acct-2", "GetRecords", T, 1, 0, 0, {}),
        ("acct-1", "PutRecords", T + dt.timedelta(hours=1), 4, 4, 0, {"records": 1}),
    ]
    day = T.replace(hour=0)
    assert rows(UsageDay) == [
        ("acct-1", "PutRecords", day, 9, 5, 1, {"records": 31, "bytes": 9}),
        ("acct-2", "GetRecords", day, 1, 0, 0, {}),
    ]
    assert not FlushedMinute.objects.filter(rolled_up=False).exists()


def test_running_the_rollup_again_changes_nothing(a_morning) -> None:
    usage_rollup()
    hours, days = rows(UsageHour), rows(UsageDay)
    FlushedMinute.objects.update(rolled_up=False)  # as if the first run's marks were lost

    usage_rollup()

    assert (rows(UsageHour), rows(UsageDay)) == (hours, days)


def test_a_minute_flushed_after_its_hour_was_rolled_up_is_folded_in_once(a_morning) -> None:
    usage_rollup()

    flushed(
        T + dt.timedelta(minutes=30), customer="acct-1", allowed=10, denied=0, shadow_denied=0, costs={"records": 5}
    )
    report = usage_rollup()

    assert (report.minutes, report.hours, report.days) == (1, 1, 1)
    assert rows(UsageHour)[0] == ("acct-1", "PutRecords", T, 15, 1, 1, {"records": 35, "bytes": 9})
    assert rows(UsageDay)[0] == ("acct-1", "PutRecords", T.replace(hour=0), 19, 5, 1, {"records": 36, "bytes": 9})


def test_a_backlog_bigger_than_one_batch_is_finished_by_the_next_runs(a_morning) -> None:
    first = usage_rollup(batch_minutes=2)

    assert (first.minutes, first.pending) == (2, 1)
    assert usage_rollup(batch_minutes=2) == RollupReport(minutes=1, hours=1, days=1, pending=0)
    assert rows(UsageDay)[0][3] == 9


def test_with_nothing_flushed_the_rollup_does_nothing() -> None:
    assert usage_rollup() == RollupReport()
    assert "rolled up 0 flushed minutes" in RollupReport().summary


def someone_waits_for_the_rollup_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s",
            [ROLLUP_LOCK_ID],
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_a_second_rollup_waits_until_the_first_has_committed(a_morning) -> None:
    reports = []

    def second_rollup():
        try:
            reports.append(usage_rollup())
        finally:
            connection.close()

    thread = threading.Thread(target=second_rollup)
    with transaction.atomic():
        _lock()  # the first rollup, still running
        thread.start()
        deadline = time.monotonic() + 10
        while not someone_waits_for_the_rollup_lock() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert someone_waits_for_the_rollup_lock()
        assert reports == []
    thread.join(timeout=10)

    assert [report.minutes for report in reports] == [3]


def counters(model) -> list[tuple]:
    found = model.objects.order_by("bucket", "customer", "operation")
    return [
        (r.customer, r.bucket, r.allowed, r.denied, r.degraded, r.rule_denied, r.unavailable, r.costs) for r in found
    ]


def test_every_counter_rolls_up_the_degraded_rule_denied_and_unavailable_ones_too() -> None:
    flushed(T, customer="acct-1", allowed=1, denied=1, degraded=2, rule_denied=3, unavailable=4, costs={"r": 1})
    flushed(
        T + dt.timedelta(minutes=5), customer="acct-1", allowed=0, denied=0, degraded=1, rule_denied=1, unavailable=1,
        costs={},
    )  # fmt: skip

    usage_rollup()

    assert counters(UsageHour) == [("acct-1", T, 1, 1, 3, 4, 5, {"r": 1})]
    assert counters(UsageDay) == [("acct-1", T.replace(hour=0), 1, 1, 3, 4, 5, {"r": 1})]


def session_time(model) -> list[tuple]:
    return list(model.objects.order_by("bucket", "customer").values_list("customer", "bucket", "session_ms"))


def test_session_time_rolls_up_into_hours_and_days_and_a_late_minute_is_folded_in_once() -> None:
    """session_ms is summed like the counters, including a minute with time held but no check in it (a lease
    acquired in an earlier minute), and a minute flushed after its hour was rolled up."""
    flushed(T + dt.timedelta(minutes=1), customer="acct-1", allowed=1, denied=0, costs={}, session_ms=59_000)
    flushed(T + dt.timedelta(minutes=2), customer="acct-1", allowed=0, denied=0, costs={}, session_ms=60_000)
    flushed(T + dt.timedelta(hours=1), customer="acct-1", allowed=0, denied=0, costs={}, session_ms=1_500)
    flushed(T + dt.timedelta(minutes=9), customer="acct-2", allowed=2, denied=0, costs={}, session_ms=0)

    usage_rollup()

    day = T.replace(hour=0)
    assert session_time(UsageHour) == [("acct-1", T, 119_000), ("acct-2", T, 0), ("acct-1", T + HOUR, 1_500)]
    assert session_time(UsageDay) == [("acct-1", day, 120_500), ("acct-2", day, 0)]

    flushed(T + dt.timedelta(minutes=30), customer="acct-2", allowed=0, denied=0, costs={}, session_ms=7_250)
    usage_rollup()
    usage_rollup()

    assert session_time(UsageHour)[1] == ("acct-2", T, 7_250)
    assert session_time(UsageDay) == [("acct-1", day, 120_500), ("acct-2", day, 7_250)]


def test_decisions_written_into_a_minute_already_rolled_up_reach_its_hour_and_day_at_the_next_rollup(a_morning) -> None:
    usage_rollup()

    usage_decisions_add(
        rows=[
            DecisionCounts("acct-1", "PutRecords", minute_number(T + dt.timedelta(minutes=1)), allowed=2, degraded=2,
                           costs={"records": 7}),
            DecisionCounts("acct-1", "PutRecords", minute_number(T + dt.timedelta(minutes=1)), rule_denied=3),
            DecisionCounts("acct-2", "GetRecords", minute_number(T + dt.timedelta(hours=1)), unavailable=4),
        ]
    )  # fmt: skip
    report = usage_rollup()

    assert (report.minutes, report.marked, report.hours, report.days, report.pending) == (0, 2, 2, 1, 0)
    hour = UsageHour.objects.get(customer="acct-1", operation="PutRecords", bucket=T)
    assert (hour.allowed, hour.denied, hour.degraded, hour.rule_denied, hour.costs) == (
        7, 1, 2, 3, {"records": 37, "bytes": 9}
    )  # fmt: skip
    assert UsageHour.objects.get(customer="acct-2", bucket=T + dt.timedelta(hours=1)).unavailable == 4
    day = UsageDay.objects.get(customer="acct-1", operation="PutRecords")
    assert (day.allowed, day.denied, day.degraded, day.rule_denied, day.costs) == (
        11,
        5,
        2,
        3,
        {"records": 38, "bytes": 9},
    )
    assert UsageDay.objects.get(customer="acct-2", operation="GetRecords").unavailable == 4
    assert not RollupMark.objects.exists()
    assert usage_rollup() == RollupReport()


def test_a_minute_no_check_reached_redis_in_is_rolled_up_and_a_later_flush_of_it_still_adds() -> None:
    usage_decisions_add(rows=[DecisionCounts("acct-1", "PutRecords", minute_number(T), denied=3, degraded=3)])

    assert usage_rollup().marked == 1
    assert UsageHour.objects.values_list("denied", "degraded").get() == (3, 3)

    # Redis comes back within the minute; the store's usage of it is flushed as usual, not discarded.
    clock = ManualClock(start_ms=minute_number(T) * 60_000)
    store = MemoryStore(clock=clock)
    spend(store, customer="acct-1", costs={"records": 5})
    assert usage_flush(store=store, now_ms=clock.now_ms() + 180_000).minutes == 1
    usage_rollup()

    hour = UsageHour.objects.get()
    assert (hour.allowed, hour.denied, hour.degraded, hour.costs) == (1, 3, 3, {"records": 5, "requests": 1})
