import datetime as dt

import factory

from apps.engine import CheckItem, LimitSpec, MemoryStore
from apps.engine.decision_usage import decision_usage
from apps.usage.models import FlushedMinute, QuarantinedUsage, UsageDay, UsageHour, UsageMinute, UsageWriter
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
    """One check through the engine `store` against a per-customer minute limit, its usage left in the store the way
    the version before the decision ledger counted it there (check.lua's usage phase): what usage_flush still drains
    after an upgrade. Returns its Decision."""
    limit = LimitSpec(
        name="per-minute", algorithm="fixed_window", quantity=quantity, period_s=60, key_by=("customer",), shadow=shadow
    )
    item = CheckItem(customer=customer, operation=operation, costs=costs or {})
    decision = store.check(item, [limit])
    left_in_store(store, item, [limit], decision)
    return decision


def left_in_store(store, item, limits, decision) -> None:
    """Write `decision`'s usage into `store`'s usage hashes, as the previous version's check script did."""
    usage = decision_usage(item, limits, decision, decision.decided_at_ms)
    if usage is None:
        return
    allowed, shadow, logged, costs, records = usage
    fields = {"allowed" if allowed else "denied": 1, "shadow_denied": int(shadow), "logged": logged}
    fields.update({f"cost:{unit}": amount for unit, amount in costs})
    layout = store._layout
    fields.update({f"{layout.prefix}:{counter}|{start}": amount for (counter, start), amount in records})
    minute, base = decision.decided_at_ms // 60_000, layout.usage_base(item)
    if isinstance(store, MemoryStore):
        counters = store._usage.setdefault(minute, {}).setdefault(base, {})
        for name, amount in fields.items():
            counters[name] = counters.get(name, 0) + amount
        return
    client = store._client
    for name, amount in fields.items():
        if amount:
            client.hincrby(f"{base}{minute}", name, amount)
    client.sadd(layout.usage_index_key(minute), f"{base}{minute}")


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


class UsageWriterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = UsageWriter

    name = factory.Sequence(lambda n: f"api-host:{1000 + n}:0a1b2c3d")
    flushed_at = factory.LazyFunction(lambda: dt.datetime.now(dt.UTC))
    interval_s = 2.0
