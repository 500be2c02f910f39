"""Reading usage: which table serves a granularity, a customer's series, the most throttled and busiest customers.

Reports (apps/reports) read rows for exports and the usage API on top of these tables."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import F, QuerySet, Sum

from apps.usage import vocabulary
from apps.usage.models import CounterRecord, UsageBucket, UsageDay, UsageHour, UsageMinute
from apps.usage.vocabulary import REPORTED, SESSION_MS, checks

USAGE_TABLES: dict[str, type[UsageBucket]] = {"minute": UsageMinute, "hour": UsageHour, "day": UsageDay}
MINUTE_MS = 60_000
READ_CHUNK = 10_000  # counter records fetched from PostgreSQL at a time
# Most services (or keys) the admin's list filter offers.
MAX_CALLERS = 200
LOCAL_DENIED = "local_denied"  # a part of denied, not reported (vocabulary.py): read for the most throttled only
# What a customer's usage series holds per operation: the decision counters, then the session time (ms) its leases
# were held. Not every stored amount: `logged` is the decision log's bookkeeping, not the customer's usage.
SERIES_AMOUNTS = (*REPORTED, SESSION_MS)


@dataclass(frozen=True, slots=True)
class UsageRange:
    """A time range the admin offers: which table serves it, its bucket length and how many buckets."""

    key: str
    label: str
    granularity: str
    step: dt.timedelta
    buckets: int

    def bounds(self, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        """[start, end) ending with the bucket `now` falls in, so the right edge of a chart is now."""
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        end = now - (now - epoch) % self.step + self.step
        return end - self.step * self.buckets, end


# Short ranges read minutes, longer ones the rolled-up hours and days (rolled up every five minutes),
# so no page reads more than a few hundred rows per operation.
USAGE_RANGES: dict[str, UsageRange] = {
    "hour": UsageRange("hour", "last hour", "minute", dt.timedelta(minutes=1), 60),
    "day": UsageRange("day", "last 24 hours", "hour", dt.timedelta(hours=1), 24),
    "30d": UsageRange("30d", "last 30 days", "day", dt.timedelta(days=1), 30),
}
DEFAULT_USAGE_RANGE = "hour"


@dataclass(frozen=True, slots=True)
class UsageSeries:
    """A customer's usage over one range: bucket starts, and per operation a list per amount (zeros filled in).

    The amounts are SERIES_AMOUNTS: the reported counters (vocabulary.REPORTED), then `session_ms`, the milliseconds the
    customer's leases on the operation were held in each bucket."""

    range: UsageRange
    buckets: list[dt.datetime]
    operations: dict[str, dict[str, list[int]]]

    def totals(self, operation: str) -> dict[str, int]:
        return {counter: sum(values) for counter, values in self.operations[operation].items()}


def usage_series(*, customer: str, usage_range: UsageRange, now: dt.datetime) -> UsageSeries:
    """Every amount (SERIES_AMOUNTS: the counters and session_ms) per operation and bucket for `customer` over
    `usage_range`."""
    start, end = usage_range.bounds(now)
    buckets = [start + usage_range.step * index for index in range(usage_range.buckets)]
    rows = (
        USAGE_TABLES[usage_range.granularity]
        .objects.filter(customer=customer, bucket__gte=start, bucket__lt=end)
        .values_list("operation", "bucket", *SERIES_AMOUNTS)
    )
    operations: dict[str, dict[str, list[int]]] = {}
    for operation, bucket, *counts in rows:
        lines = operations.setdefault(operation, {amount: [0] * len(buckets) for amount in SERIES_AMOUNTS})
        index = (bucket - start) // usage_range.step  # the bucket it falls in, aligned or not
        for counter, count in zip(SERIES_AMOUNTS, counts, strict=True):
            lines[counter][index] += count
    return UsageSeries(usage_range, buckets, dict(sorted(operations.items())))


@dataclass(frozen=True, slots=True)
class CustomerTotals:
    """One customer's counters summed over a range (per REPORTED counter, vocabulary.py)."""

    customer: str
    totals: dict[str, int]

    def __getattr__(self, name: str) -> int:
        # row.allowed, row.denied, ...: what the pages and templates read; only the counters.
        if name in REPORTED:
            return self.totals.get(name, 0)
        raise AttributeError(name)

    @property
    def local_denied(self) -> int:
        """Refused by the caller's own SDK local limiter (a part of denied)."""
        return self.totals.get(LOCAL_DENIED, 0)

    @property
    def throttled(self) -> int:
        """Refused by the platform's limits: denied without what the caller's own SDK local limiter refused."""
        return self.totals.get("denied", 0) - self.local_denied

    @property
    def denied_share(self) -> float:
        """Denied ÷ the checks its limits decided, allowed + denied (0 when there were none)."""
        return vocabulary.denied_share(self.totals["allowed"], self.totals["denied"])

    @property
    def checks(self) -> int:
        """Every check answered (vocabulary.checks)."""
        return checks(self.totals)


def _customer_totals(granularity: str, start: dt.datetime, end: dt.datetime) -> QuerySet[Any, Any]:
    return (
        USAGE_TABLES[granularity]
        .objects.filter(bucket__gte=start, bucket__lt=end)
        .values("customer")
        .annotate(**{f"total_{name}": Sum(name) for name in (*REPORTED, LOCAL_DENIED)})
    )


def _as_totals(rows: Iterable[dict[str, Any]]) -> list[CustomerTotals]:
    return [
        CustomerTotals(row["customer"], {name: row[f"total_{name}"] for name in (*REPORTED, LOCAL_DENIED)})
        for row in rows
    ]


def usage_most_throttled(
    *, granularity: str, start: dt.datetime, end: dt.datetime, count: int = 10
) -> list[CustomerTotals]:
    """The customers refused most by their limits in [start, end), most refusals first (only those refused at
    least once); refusals by an access rule or for want of Redis are not throttling, nor are the refusals of a
    caller's own SDK local limiter (local_denied, a part of denied: it shapes itself, and it may try again and
    again in a loop). Each row still tells them (`local_denied`), and `throttled` is what is ranked."""
    rows = _customer_totals(granularity, start, end).annotate(throttled=F("total_denied") - F("total_local_denied"))
    return _as_totals(rows.filter(throttled__gt=0).order_by("-throttled", "customer")[:count])


def usage_busiest_customers(
    *, granularity: str, start: dt.datetime, end: dt.datetime, count: int = 200
) -> list[CustomerTotals]:
    """The customers with the most checks their limits decided (allowed + denied) in [start, end), busiest first."""
    rows = _customer_totals(granularity, start, end).annotate(total=F("total_allowed") + F("total_denied"))
    return _as_totals(rows.order_by("-total", "customer")[:count])


def usage_callers(*, field: str = "service") -> list[str]:
    """Every calling service's name (field "service") or API key prefix ("api_key") usage rows hold, "" (none)
    first: read from the day table, the smallest (one row per customer x operation x caller x day)."""
    values = UsageDay.objects.order_by(field).values_list(field, flat=True).distinct()
    return list(values[:MAX_CALLERS])


@dataclass(frozen=True, slots=True)
class CallerTotals:
    """One operation's usage by one calling service and key over a range (the customer page's table)."""

    operation: str
    service: str
    api_key: str
    totals: dict[str, int]  # per SERIES_AMOUNTS


def usage_by_caller(*, customer: str, usage_range: UsageRange, now: dt.datetime) -> list[CallerTotals]:
    """`customer`'s usage over `usage_range` per operation x calling service x API key, by operation then busiest
    first: who made the checks the charts count."""
    start, end = usage_range.bounds(now)
    rows = (
        USAGE_TABLES[usage_range.granularity]
        .objects.filter(customer=customer, bucket__gte=start, bucket__lt=end)
        .values_list("operation", "service", "api_key")
        .annotate(*(Sum(amount) for amount in SERIES_AMOUNTS))
        .order_by()
    )
    found = [
        CallerTotals(operation, service, api_key, dict(zip(SERIES_AMOUNTS, sums, strict=True)))
        for operation, service, api_key, *sums in rows
    ]
    return sorted(found, key=lambda row: (row.operation, -checks(row.totals), row.service, row.api_key))


def counter_history(*, counter: str, since_ms: int, now_ms: int) -> list[tuple[int, int]]:
    """(bucket start ms, amount) of `counter`'s records whose bucket may reach into [since, now] (a minute's
    bucket starts up to a minute before `since`; a window's starts at it)."""
    rows = CounterRecord.objects.filter(counter=counter, start_ms__gt=since_ms - MINUTE_MS, start_ms__lte=now_ms)
    return list(rows.order_by("start_ms").values_list("start_ms", "amount"))


def counter_histories_open(*, now_ms: int) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """(counter, its records as (bucket start ms, amount)) for every counter with a record still in reach at
    `now_ms` (the warm-up's bulk read), READ_CHUNK records at a time."""
    rows = CounterRecord.objects.filter(until_ms__gt=now_ms).order_by("counter", "start_ms")
    counter: str | None = None
    history: list[tuple[int, int]] = []
    for name, start, amount in rows.values_list("counter", "start_ms", "amount").iterator(chunk_size=READ_CHUNK):
        if name != counter:
            if counter is not None:
                yield counter, history
            counter, history = name, []
        history.append((start, amount))
    if counter is not None:
        yield counter, history
