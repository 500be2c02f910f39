import datetime as dt

import factory

from apps.engine import CheckItem, LimitSpec
from apps.usage.models import FlushedMinute, QuarantinedUsage, UsageDay, UsageHour, UsageMinute
from apps.usage.services import DecisionCounts


class UsageMinuteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = UsageMinute

    customer = factory.Sequence(lambda n: f"acct-{n}")
    operation = "PutRecords"
    bucket = factory.Sequence(lambda n: dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=n))
    allowed = 10
    denied = 2
    costs = factory.LazyFunction(lambda: {"requests": 10, "records": 4000})


class UsageHourFactory(UsageMinuteFactory):
    class Meta:
        model = UsageHour

    bucket = factory.Sequence(lambda n: dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=n))


class UsageDayFactory(UsageMinuteFactory):
    class Meta:
        model = UsageDay

    bucket = factory.Sequence(lambda n: dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=n))


def spend(store, *, customer="acct-1", operation="PutRecords", costs=None, quantity=1000, shadow=False):
    """One check through the engine `store` against a per-customer minute limit; returns its Decision."""
    limit = LimitSpec(
        name="per-minute", algorithm="fixed_window", quantity=quantity, period_s=60, key_by=("customer",), shadow=shadow
    )
    return store.check(CheckItem(customer=customer, operation=operation, costs=costs or {}), [limit])


class FlushedMinuteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FlushedMinute
        django_get_or_create = ("minute",)

    minute = factory.Sequence(lambda n: 29_000_000 + n)


def minute_number(bucket: dt.datetime) -> int:
    return int(bucket.timestamp()) // 60


def flushed(bucket: dt.datetime, **fields) -> UsageMinute:
    """A UsageMinute row as a flush leaves it: the row and its minute's claim (not rolled up yet)."""
    FlushedMinuteFactory(minute=minute_number(bucket))
    return UsageMinuteFactory(bucket=bucket, **fields)


class DecisionCountsFactory(factory.Factory):
    """Decisions made without Redis, as the enforcement ledger hands them to usage_decisions_add."""

    class Meta:
        model = DecisionCounts

    customer = "acct-1"
    operation = "PutRecords"
    minute = factory.LazyFunction(lambda: minute_number(dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)))
    allowed = 1
    degraded = 1
    costs = factory.LazyFunction(lambda: {"requests": 1})


class QuarantinedUsageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QuarantinedUsage

    writer = "usage_flush"
    minute = factory.Sequence(lambda n: 29_000_000 + n)
    key = factory.LazyAttribute(lambda row: repr(("a\x00b", "PutRecords", row.minute)))
    row = "{'allowed': 3, 'denied': 0}"
    error = "PostgreSQL text fields cannot contain NUL (0x00) bytes"
