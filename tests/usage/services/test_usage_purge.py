"""usage_purge: usage past retention goes; what a flush or rollup may still need stays."""

import datetime as dt

import pytest

from apps.usage.models import FlushedMinute, RollupMark, UsageDay, UsageHour, UsageMinute
from apps.usage.services import usage_purge
from tests.usage.factories import (
    FlushedMinuteFactory,
    UsageDayFactory,
    UsageHourFactory,
    UsageMinuteFactory,
    flushed,
    minute_number,
)

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
DAYS = dt.timedelta(days=1)


@pytest.fixture(autouse=True)
def retention(settings):
    settings.QUOTA_RETENTION_MINUTE_DAYS = 14
    settings.QUOTA_RETENTION_HOUR_DAYS = 400
    settings.QUOTA_RETENTION_DAY_DAYS = 0


def rolled_up_minute(bucket, **fields):
    row = flushed(bucket, **fields)
    FlushedMinute.objects.filter(minute=minute_number(bucket)).update(rolled_up=True)
    return row


def buckets(model):
    return sorted(model.objects.values_list("bucket", flat=True))


def test_usage_past_each_tables_retention_is_deleted_and_days_are_kept_forever() -> None:
    old_minute = rolled_up_minute(NOW - 15 * DAYS)
    kept_minute = rolled_up_minute(NOW - 13 * DAYS)
    UsageHourFactory(bucket=NOW - 401 * DAYS)
    kept_hour = UsageHourFactory(bucket=NOW - 399 * DAYS)
    ancient_day = UsageDayFactory(bucket=NOW - 5000 * DAYS)

    report = usage_purge(now=NOW)

    assert (report["minutes"], report["hours"], report["days"]) == (1, 1, 0)
    assert buckets(UsageMinute) == [kept_minute.bucket]
    assert buckets(UsageHour) == [kept_hour.bucket]
    assert buckets(UsageDay) == [ancient_day.bucket]
    assert old_minute.bucket < kept_minute.bucket


def test_a_day_retention_when_set_purges_days_too(settings) -> None:
    settings.QUOTA_RETENTION_DAY_DAYS = 30
    UsageDayFactory(bucket=NOW - 31 * DAYS)

    assert usage_purge(now=NOW)["days"] == 1


def test_minutes_not_yet_rolled_up_stay_with_the_rest_of_their_day_whatever_their_age() -> None:
    pending = flushed(NOW - 20 * DAYS + dt.timedelta(hours=5))
    same_day = rolled_up_minute(NOW - 20 * DAYS + dt.timedelta(hours=1))
    rolled_up_minute(NOW - 21 * DAYS)

    report = usage_purge(now=NOW)

    assert report["minutes"] == 1
    assert buckets(UsageMinute) == [same_day.bucket, pending.bucket]


def test_minutes_written_without_redis_and_not_yet_rolled_up_stay_with_the_rest_of_their_day() -> None:
    marked = UsageMinuteFactory(bucket=NOW - 20 * DAYS + dt.timedelta(hours=5))
    RollupMark.objects.create(minute=minute_number(marked.bucket))
    same_day = rolled_up_minute(NOW - 20 * DAYS + dt.timedelta(hours=1))
    rolled_up_minute(NOW - 21 * DAYS)

    assert usage_purge(now=NOW)["minutes"] == 1
    assert buckets(UsageMinute) == [same_day.bucket, marked.bucket]


def test_a_short_retention_never_purges_what_a_late_flush_may_still_recompute(settings) -> None:
    settings.QUOTA_RETENTION_MINUTE_DAYS = 1
    kept = rolled_up_minute(NOW - 2 * DAYS)
    rolled_up_minute(NOW - 4 * DAYS)

    usage_purge(now=NOW)

    assert buckets(UsageMinute) == [kept.bucket]


def test_flush_claims_stay_while_redis_may_still_hold_their_minute_and_until_rolled_up() -> None:
    old_rolled = FlushedMinuteFactory(minute=minute_number(NOW - 4 * DAYS), rolled_up=True)
    recent_rolled = FlushedMinuteFactory(minute=minute_number(NOW - 2 * DAYS), rolled_up=True)
    old_pending = FlushedMinuteFactory(minute=minute_number(NOW - 5 * DAYS), rolled_up=False)

    assert usage_purge(now=NOW)["claims"] == 1
    assert set(FlushedMinute.objects.all()) == {recent_rolled, old_pending}
    assert old_rolled.minute < recent_rolled.minute
