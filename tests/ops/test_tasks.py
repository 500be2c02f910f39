"""The beat tasks: each runs its job through apps.ops.jobs, returns the report, and retries on outages."""

import dataclasses
import datetime as dt
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from apps.ops.jobs import JOBS
from apps.ops.tasks import flush_usage_task, purge_expired_task, rollup_usage_task
from apps.usage.models import UsageMinute
from tests.usage.factories import flushed, spend

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000


def test_the_flush_task_flushes_this_processs_store_and_returns_its_report(engine, clock) -> None:
    clock.set(int(time.time() * 1000) - 10 * MINUTE_MS)
    spend(engine, costs={"records": 4})

    result = flush_usage_task.apply().get()

    assert result["job"] == "flush_usage"
    assert (result["minutes"], result["rows"]) == (1, 1)
    assert result["summary"].startswith("flushed 1 minutes, 1 rows")
    assert UsageMinute.objects.get().costs == {"records": 4, "requests": 1}


def test_the_rollup_task_returns_its_report() -> None:
    flushed(dt.datetime(2026, 1, 1, 10, 5, tzinfo=dt.UTC))

    result = rollup_usage_task.apply().get()

    assert (result["job"], result["minutes"], result["hours"], result["days"]) == ("rollup_usage", 1, 1, 1)


def test_the_purge_task_returns_its_report() -> None:
    result = purge_expired_task.apply().get()

    assert result["job"] == "purge_expired"
    assert "expire by TTL in Redis" in result["summary"]


def test_a_task_retries_when_redis_or_the_database_fails_and_then_succeeds(monkeypatch) -> None:
    calls = []
    job = JOBS["rollup_usage"]

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RedisConnectionError("Redis went away")
        return job.run()

    monkeypatch.setitem(JOBS, "rollup_usage", dataclasses.replace(job, run=flaky))

    result = rollup_usage_task.apply()

    assert result.successful()
    assert len(calls) == 2


def test_a_task_gives_up_after_its_retries_and_reports_the_failure(monkeypatch) -> None:
    calls = []

    def down():
        calls.append(1)
        raise RedisConnectionError("Redis is down")

    monkeypatch.setitem(JOBS, "flush_usage", dataclasses.replace(JOBS["flush_usage"], run=down))

    result = flush_usage_task.apply()

    assert result.failed()
    assert len(calls) == 1 + flush_usage_task.max_retries
