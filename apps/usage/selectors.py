"""Reading usage: which table serves a granularity, who may read what, rows in a stable order."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import InvalidInput
from apps.enforcement.services import check_authorize
from apps.usage.models import UsageBucket, UsageDay, UsageHour, UsageMinute

USAGE_TABLES: dict[str, type[UsageBucket]] = {"minute": UsageMinute, "hour": UsageHour, "day": UsageDay}
# The longest range one request may cover per granularity (None: any); longer ones are refused.
MAX_RANGE: dict[str, dt.timedelta | None] = {
    "minute": dt.timedelta(days=7),
    "hour": dt.timedelta(days=400),
    "day": None,
}
ORDER = ("bucket", "customer", "operation")


@dataclass(frozen=True, slots=True)
class UsageQuery:
    granularity: str
    start: dt.datetime
    end: dt.datetime
    customer: str | None = None
    operation: str | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """The last row a page showed: the next page starts after it (keyset pagination in ORDER)."""

    bucket: dt.datetime
    customer: str
    operation: str


@dataclass(frozen=True, slots=True)
class UsagePage:
    rows: list[UsageBucket]
    next: Position | None


def usage_rows(*, principal: ApiPrincipal, query: UsageQuery) -> QuerySet[UsageBucket]:
    """The rows `principal` may see for `query`, in ORDER (authorized now, read when iterated)."""
    usage_authorize(principal=principal, customer=query.customer, operation=query.operation)
    rows = USAGE_TABLES[query.granularity].objects.filter(bucket__gte=query.start, bucket__lt=query.end)
    if query.customer is not None:
        rows = rows.filter(customer=query.customer)
    if query.operation is not None:
        rows = rows.filter(operation=query.operation)
    elif principal.operations:
        rows = rows.filter(operation__in=principal.operations)
    return rows.order_by(*ORDER)


def usage_page(*, principal: ApiPrincipal, query: UsageQuery, after: Position | None, size: int) -> UsagePage:
    rows = usage_rows(principal=principal, query=query)
    if after is not None:
        rows = rows.filter(
            Q(bucket__gt=after.bucket)
            | Q(bucket=after.bucket, customer__gt=after.customer)
            | Q(bucket=after.bucket, customer=after.customer, operation__gt=after.operation)
        )
    found = list(rows[: size + 1])
    if len(found) <= size:
        return UsagePage(found, None)
    last = found[size - 1]
    return UsagePage(found[:size], Position(last.bucket, last.customer, last.operation))


def usage_authorize(*, principal: ApiPrincipal, customer: str | None, operation: str | None) -> None:
    """A key bound to a customer reads only that customer's usage, and must name it; a key limited to
    some operations reads only those (403 for others)."""
    if customer is not None:
        check_authorize(principal, customer, operation)
        return
    if principal.customer is not None:
        raise InvalidInput(
            "This API key is bound to a customer: name it in `customer`.",
            fields={"customer": ["Required for a key bound to a customer."]},
        )
    if operation is not None:
        check_authorize(principal, "", operation)  # a service-wide key may read any customer: only the operation
