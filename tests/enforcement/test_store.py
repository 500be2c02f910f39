"""The embedded default (no REDIS_URL): the web process flushes its own in-process usage."""

import time

import pytest

from apps.enforcement import store as store_module
from apps.enforcement.store import engine_store, engine_store_use, usage_flusher_start
from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.usage.models import UsageMinute

pytestmark = pytest.mark.django_db(transaction=True)
AN_HOUR_AGO_MS = (int(time.time()) - 3600) * 1000


def test_in_process_usage_reaches_the_database_without_a_celery_worker() -> None:
    memory = MemoryStore("embedded", clock=ManualClock(AN_HOUR_AGO_MS))
    limit = LimitSpec("per-minute", "fixed_window", 100, period_s=60, key_by=("customer",))
    for _ in range(3):
        memory.check(CheckItem("acct-1", "PutRecords", costs={"records": 7}), [limit])

    flusher = usage_flusher_start(memory, interval_s=0.05)
    try:
        deadline = time.monotonic() + 10
        while not UsageMinute.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        flusher.stop()
    row = UsageMinute.objects.get()
    assert (row.customer, row.operation, row.allowed, row.costs) == (
        "acct-1",
        "PutRecords",
        3,
        {"records": 21, "requests": 3},
    )
    assert memory.usage_minutes() == []


def test_the_embedded_store_starts_its_flusher(settings, monkeypatch) -> None:
    settings.REDIS_URL = ""
    started = []
    monkeypatch.setattr(store_module, "usage_flusher_start", lambda store, interval: started.append(store))
    engine_store_use(None)
    try:
        built = engine_store()
    finally:
        engine_store_use(None)
    assert isinstance(built, MemoryStore)
    assert started == [built]
