"""Reading the decision log back: per slot in time order for the audit, whole ranges for export, the groups
(plans) of customers, and the degraded minutes the log cannot show.

Every read streams: a server-side cursor per slot (`iterator(chunk_size)`) on PostgreSQL, so a day of millions
of entries is never held in memory. Run the slot streams inside one transaction: outside one, Django opens
its server-side cursors WITH HOLD, and PostgreSQL then copies each cursor's whole result at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import BigIntegerField, Q, QuerySet
from django.db.models.expressions import RawSQL

from apps.customers.models import Customer
from apps.engine.decision_log import EXPIRE
from apps.quality.analysis.events import Event
from apps.quality.models import DecisionEvent
from apps.usage.models import UsageMinute

# The entries fetched per round trip by all the slot cursors together (each gets its share, at least MIN_CHUNK).
BUFFERED_ENTRIES = 100_000
MIN_CHUNK = 100
MAX_CHUNK = 5_000
NO_PLAN = "(no plan)"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EVENT_FIELDS = tuple(name for name in Event.__slots__ if name != "at_ms")
# Exact: `at` holds whole milliseconds (numeric arithmetic in PostgreSQL, no float).
AT_MS = RawSQL('(extract(epoch FROM "quality_decisionevent"."at") * 1000)::bigint', [], output_field=BigIntegerField())


@dataclass(frozen=True, slots=True)
class LogFilters:
    """A range [start, end) of the log, optionally one customer, one limit, or the customers of one plan."""

    start: dt.datetime
    end: dt.datetime
    customer: str | None = None
    limit: str | None = None
    group: str | None = None
    group_customers: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, str]:
        return {name: value for name in ("customer", "limit", "group") if (value := getattr(self, name))}


def log_events(*, filters: LogFilters) -> QuerySet[DecisionEvent]:
    """The entries of the range and filters, unordered (a range on `at`: PostgreSQL reads only its days).

    The limit filter keeps the `expire` entries that carry no limit (the script knows only the lease member
    then): the audit joins them to their acquire and ignores those of other limits.
    """
    rows = DecisionEvent.objects.filter(at__gte=filters.start, at__lt=filters.end).order_by()
    if filters.customer:
        rows = rows.filter(customer=filters.customer)
    if filters.group:
        rows = rows.filter(customer__in=filters.group_customers)
    if filters.limit:
        rows = rows.filter(Q(limit=filters.limit) | Q(kind=EXPIRE, limit=""))
    return rows


def log_slots(*, filters: LogFilters) -> list[str]:
    """The slots (streams) with entries in the range and filters."""
    return sorted(log_events(filters=filters).values_list("slot", flat=True).distinct())


def log_slot_streams(*, filters: LogFilters) -> list[Iterator[Event]]:
    """One iterator of analysis Events per slot, each in (at, entry_id) order: what audit() merges.

    Within one millisecond entries follow their ids as text, which is the stream's order unless the ms holds ten
    entries or more ("ms-10" sorts before "ms-9"); the audit settles each millisecond's changes together."""
    slots = log_slots(filters=filters)
    chunk = max(MIN_CHUNK, min(MAX_CHUNK, BUFFERED_ENTRIES // max(len(slots), 1)))
    return [_slot_events(filters, slot, chunk) for slot in slots]


def _slot_events(filters: LogFilters, slot: str, chunk: int) -> Iterator[Event]:
    if connection.vendor == "postgresql":
        yield from _slot_events_sql(filters, slot, chunk)
        return
    rows = log_events(filters=filters).filter(slot=slot).order_by("at", "entry_id")
    for values in rows.values_list("at", *EVENT_FIELDS).iterator(chunk_size=chunk):
        yield Event(at_ms_of(values[0]), *values[1:])


def _slot_events_sql(filters: LogFilters, slot: str, chunk: int) -> Iterator[Event]:
    """PostgreSQL: the same rows through a server-side cursor of plain SQL, the time already in ms: three times
    faster than the ORM's iterator (200,000 entries of 500 slots read in 2.3 s instead of 7 s), which matters
    for a day of millions of entries. The SQL is the ORM's query (log_events), so the filters are the same."""
    rows = log_events(filters=filters).filter(slot=slot).annotate(at_ms=AT_MS).order_by("at", "entry_id")
    sql, params = rows.values_list(*EVENT_FIELDS, "at_ms").query.sql_with_params()
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(chunk):
            for *values, at_ms in batch:
                yield Event(at_ms, *values)


def at_ms_of(moment: dt.datetime) -> int:
    """Milliseconds since the epoch, exactly (no float)."""
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def customer_groups() -> dict[str, str]:
    """Every customer's group: its plan's name, NO_PLAN without one."""
    rows = Customer.objects.values_list("external_id", "plan__name")
    return {customer: plan or NO_PLAN for customer, plan in rows}


def group_customers(group: str) -> tuple[str, ...]:
    """The customers of plan `group` (NO_PLAN: those without a plan)."""
    rows = Customer.objects.filter(plan__isnull=True) if group == NO_PLAN else Customer.objects.filter(plan__name=group)
    return tuple(rows.values_list("external_id", flat=True))


@dataclass(frozen=True, slots=True)
class DegradedMinute:
    customer: str
    operation: str
    minute: dt.datetime
    degraded: int


def degraded_minutes(*, filters: LogFilters) -> list[DegradedMinute]:
    """The customer x operation x minutes of the range with decisions made without Redis (UsageMinute.degraded):
    the log has none of them, so the audit cannot check them."""
    rows = UsageMinute.objects.filter(bucket__gte=filters.start, bucket__lt=filters.end, degraded__gt=0)
    if filters.customer:
        rows = rows.filter(customer=filters.customer)
    if filters.group:
        rows = rows.filter(customer__in=filters.group_customers)
    found = rows.order_by("bucket", "customer", "operation").values_list("customer", "operation", "bucket", "degraded")
    return [DegradedMinute(*row) for row in found]


def degraded_total(minutes: list[DegradedMinute]) -> int:
    return sum(minute.degraded for minute in minutes)


def log_entries_count(*, filters: LogFilters) -> int:
    return log_events(filters=filters).count()
