"""A real Celery worker with an embedded beat, scheduled by setup_periodic_tasks, flushes usage into PostgreSQL."""

import time

import pytest

from apps.engine import ManualClock
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageMinute
from tests.support.celery_worker import beat_every_second, celery_worker, throwaway_broker
from tests.usage.factories import spend

WAIT_S = 60
MINUTE_MS = 60_000


@pytest.fixture
def broker():
    with throwaway_broker() as url:
        yield url


@pytest.fixture
def flush_every_second(transactional_db):
    beat_every_second("flush_usage")


@pytest.fixture
def worker(tmp_path, broker, redis_url, key_prefix, flush_every_second):
    with celery_worker(tmp_path, broker_url=broker, redis_url=redis_url, key_prefix=key_prefix) as running:
        yield running


@pytest.mark.slow
def test_a_worker_with_beat_flushes_usage_on_schedule_into_postgresql(worker, redis_client, key_prefix) -> None:
    process, log_path = worker
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(int(time.time() * 1000) - 10 * MINUTE_MS))
    for records in (1, 2, 3):
        spend(store, customer="acct-7", costs={"records": records})

    # The flush commits the rows, then empties the minute in Redis: wait for both.
    deadline = time.monotonic() + WAIT_S
    while not (UsageMinute.objects.exists() and not store.usage_minutes()) and time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text(errors="replace")
        time.sleep(0.2)

    row = UsageMinute.objects.get()
    assert (row.customer, row.allowed, row.costs) == ("acct-7", 3, {"records": 6, "requests": 3})
    assert store.usage_minutes() == []
