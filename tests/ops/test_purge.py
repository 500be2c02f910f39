"""The purge_expired job: every app's purge in one run, one report."""

import datetime as dt

import pytest

from apps.enforcement.models import FallbackCounter
from apps.ops.purge import purge_expired
from tests.limits.factories import OverrideFactory
from tests.usage.factories import UsageMinuteFactory

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


def test_the_purge_report_says_redis_keys_expire_by_ttl() -> None:
    UsageMinuteFactory(bucket=NOW)

    summary = purge_expired(now=NOW).summary

    assert summary.startswith("purged 0 minute, 0 hour and 0 day usage rows")
    assert "expire by TTL in Redis" in summary


def test_the_purge_runs_the_purge_of_every_app() -> None:
    OverrideFactory(ends=NOW - dt.timedelta(seconds=1))
    FallbackCounter.objects.create(key="a", window_start=NOW - dt.timedelta(days=1), window_end=NOW)

    report = purge_expired(now=NOW)

    assert (report.overrides, report.fallback_counters) == (1, 1)
