"""Counter records: added atomically by any writer, each kept until its limit can no longer need it."""

import datetime as dt
import threading

import pytest
from django.db import connection

from apps.usage.models import CounterRecord
from apps.usage.services import counter_records_add, usage_purge

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
NOW_MS = int(NOW.timestamp() * 1000)
MINUTE_MS, DAY_MS = 60_000, 86_400_000
DAILY = "c:{c=acct-1}:cal:daily:c=acct-1"
PER_MINUTE = "c:{c=acct-1}:sl:per-minute:c=acct-1"


def reach(counter: str) -> int:
    return DAY_MS if ":cal:" in counter else 2 * MINUTE_MS


def stored() -> dict[tuple[str, int], tuple[int, int]]:
    return {(row.counter, row.start_ms): (row.amount, row.until_ms) for row in CounterRecord.objects.all()}


@pytest.mark.django_db
def test_records_add_to_what_is_stored_and_are_kept_for_their_counters_reach() -> None:
    counter_records_add(records={(DAILY, NOW_MS): 5, (PER_MINUTE, NOW_MS): 2, (PER_MINUTE, NOW_MS + MINUTE_MS): 0},
                        reach=reach)  # fmt: skip
    counter_records_add(records={(DAILY, NOW_MS): 7}, reach=reach)

    assert stored() == {(DAILY, NOW_MS): (12, NOW_MS + DAY_MS), (PER_MINUTE, NOW_MS): (2, NOW_MS + 2 * MINUTE_MS)}


@pytest.mark.django_db
def test_without_a_reach_a_record_is_kept_as_long_as_any_durable_limit_may_reach(settings) -> None:
    settings.QUOTA_COUNTER_RECORD_DAYS = 3
    counter_records_add(records={(DAILY, NOW_MS): 1})

    assert stored() == {(DAILY, NOW_MS): (1, NOW_MS + 3 * DAY_MS)}


@pytest.mark.django_db
def test_the_purge_deletes_exactly_the_records_no_rebuild_can_need_any_more() -> None:
    counter_records_add(records={(DAILY, NOW_MS - DAY_MS - 1): 1, (DAILY, NOW_MS - DAY_MS): 2,
                                 (PER_MINUTE, NOW_MS - 3 * MINUTE_MS): 3, (PER_MINUTE, NOW_MS - MINUTE_MS): 4},
                        reach=reach)  # fmt: skip

    assert usage_purge(now=NOW)["counter_records"] == 2
    assert sorted(amount for amount, _ in stored().values()) == [2, 4]


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_lose_nothing() -> None:
    records = {(f"{DAILY}{n % 7}", NOW_MS + n % 3 * MINUTE_MS): 1 for n in range(40)}

    def write() -> None:
        try:
            for _ in range(10):
                counter_records_add(records=records, reach=reach)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert {key: amount for key, (amount, _) in stored().items()} == dict.fromkeys(records, 80)
