"""Issue 23 finding 6: hybrid limits of a minute or longer are durable like exact ones. What a hybrid check or a
local limiter's counters spent is recorded on the counter's window (CounterRecord, through the decision ledger),
and a counter Redis lost starts from those records: a daily quota is not handed out again after an empty Redis
restart and a worker restart. Real Redis and PostgreSQL, the API in-process (the live twin is in
test_hybrid_durability_live.py)."""

from __future__ import annotations

import pytest

from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.hybrid import counters as hybrid
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine import CheckItem
from apps.limits.snapshot_holder import snapshot_current
from apps.usage.models import CounterRecord
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_hybrid_counters")]


@pytest.fixture(autouse=True)
def _patient_redis(settings) -> None:
    """A timeout no busy test machine reaches: these tests are about what is kept, not about timeouts."""
    settings.QUOTA_REDIS_TIMEOUT_MS = 2000


def _daily(quantity: int = 40, operation: str = "Daily"):
    return CalendarLimitFactory(
        name="daily", operation=OperationFactory(name=operation), quantity=quantity, sync_ms=100, key_by=["customer"]
    )


def _check(api, operation: str = "Daily") -> bool:
    body = {"customer": "acct-1", "operation": operation}
    return bool(api.post("/api/v1/check", body, format="json").json()["allowed"])


def _records() -> dict[str, list[tuple[int, int]]]:
    decision_ledger.flush()
    found: dict[str, list[tuple[int, int]]] = {}
    for row in CounterRecord.objects.order_by("counter", "start_ms"):
        found.setdefault(row.counter, []).append((row.start_ms, row.amount))
    return found


def _name_and_window(limit_name: str) -> tuple[str, int]:
    """The daily counter's name in the records and its window's start, as the API worker has them."""
    (config,) = [limit for limit in snapshot_current().limits_by_operation["Daily"] if limit.name == limit_name]
    item = CheckItem(customer="acct-1", operation="Daily")
    record = hybrid.counter_names(limit_spec_of(config), item)[1]
    start, _ = hybrid.windows_of(config, item.timezone)(hybrid.CLOCK.now_ms())
    assert record is not None
    return record, start


def test_what_hybrid_checks_admit_is_recorded_on_the_counters_window(api) -> None:
    _daily()
    LimitFactory(name="minute-exact", operation=OperationFactory(name="Daily"), quantity=100, key_by=["customer"])

    admitted = sum(_check(api) for _ in range(5))

    record, start = _name_and_window("daily")
    assert admitted == 5
    assert record.startswith("c:{c=acct-1}:cal:daily")  # the exact counter's name: one history either way
    assert _records()[record] == [(start, 5)]


def test_what_an_all_hybrid_check_admits_is_recorded_too(api) -> None:
    _daily()

    assert sum(_check(api) for _ in range(3)) == 3

    record, start = _name_and_window("daily")
    assert _records() == {record: [(start, 3)]}


def test_a_sub_minute_hybrid_limit_records_nothing(api) -> None:
    LimitFactory(name="burst", operation=OperationFactory(name="Daily"), quantity=10, period_seconds=10, sync_ms=100)

    assert sum(_check(api) for _ in range(3)) == 3

    assert _records() == {}


def test_what_a_local_limiters_counters_grow_by_is_recorded(api) -> None:
    _daily()
    body = {"customer": "acct-1", "operation": "Daily", "instance": "sdk-1"}
    entry = api.post("/api/v1/sync", body, format="json").json()["limits"][0]
    length = entry["window_end"] - entry["window_start"]  # a UTC day
    counter = {
        "limit": "daily",
        "window_start": entry["window_start"],
        "prev_window_start": entry["window_start"] - length,
    }

    for count in (6, 6, 9):  # a retry records nothing more
        sent = {**body, "counters": [{**counter, "count": count, "count_prev": 0}]}
        assert api.post("/api/v1/sync", sent, format="json").status_code == 200

    record, start = _name_and_window("daily")
    assert _records() == {record: [(start, 9)]}


@pytest.mark.django_db(transaction=True)  # the records committed: the exchange timer's thread reads them too
def test_a_daily_quota_is_not_handed_out_again_after_redis_and_the_workers_lost_everything(
    api, redis_client, key_prefix
) -> None:
    _daily(quantity=40)
    assert sum(_check(api) for _ in range(30)) == 30
    decision_ledger.flush()  # the usage and the records reach PostgreSQL
    redis_client.delete(*redis_client.scan_iter(match=f"{key_prefix}*"))  # Redis restarted empty
    hybrid.hybrid_reset()  # and so did the worker: a new instance, no counts of its own

    admitted = sum(_check(api) for _ in range(15))

    assert admitted == 10  # before: 15, the whole quota again
