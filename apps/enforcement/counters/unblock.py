"""Unblocking a customer: forget what one limit has counted for it, so its next check starts afresh.

The counters are deleted from the engine store (every counter the limit keeps for the customer: all
resources, all bucket periods, held leases of a concurrency limit), from the PostgreSQL counters the
`database` failure policy keeps while Redis is away, and from what PostgreSQL keeps to rebuild them after a Redis
loss (their counter records, a concurrency limit's allocations): left there, the rebuild would bring the reset
count back, at the next check while the epoch is not warm, else at the next warm-up. Usage history
(UsageMinute...) is untouched: it records what happened. What a process's ledger has not written yet (its last
two seconds) is written after the reset. Only limits counted per customer can be reset for one customer; a shared
counter (global, per IP) would be reset for everyone.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
from django.db import transaction

from apps.common.exceptions import ApplicationError
from apps.enforcement.counters.guarded_store import engine_store
from apps.enforcement.counters.inspection import (
    CountersUnavailable,
    counter_keys_delete,
    customer_counter_keys,
    customer_key_head,
    is_limit_key,
)

# The database policy's counter keys follow the engine layout under their own prefix.
from apps.enforcement.fallback import fallback_layout
from apps.enforcement.models import AllocationSet, FallbackCounter
from apps.engine import KeyLayout, Store
from apps.limits.snapshot import LimitConfig
from apps.usage.models import CounterRecord

HISTORY_ACTION = "unblock"
# Counter records and allocation sets name a counter by its key without the store prefix: any prefix serves.
_NAMES = KeyLayout("names")


class CannotUnblock(ApplicationError):
    code = "cannot_unblock"
    status_code = 400


@dataclass(frozen=True, slots=True)
class UnblockReport:
    customer: str
    limit: str
    counters_deleted: int
    fallback_rows_deleted: int
    records_deleted: int = 0
    allocation_sets_deleted: int = 0

    @property
    def summary(self) -> str:
        return (
            f"Reset {self.limit} for {self.customer}: {self.counters_deleted} counter(s) in Redis, "
            f"{self.fallback_rows_deleted} kept in PostgreSQL while Redis was away, and what PostgreSQL kept to "
            f"rebuild them ({self.records_deleted} counter record(s), {self.allocation_sets_deleted} allocation "
            "set(s)) were deleted."
        )


def customer_limit_unblock(
    *, customer: str, limit: LimitConfig, actor: str, store: Store | None = None
) -> UnblockReport:
    """Delete what `limit` has counted for `customer` and record who did it in the history."""
    if "customer" not in limit.key_by:
        shared = "one counter shared by every customer" if not limit.key_by else f"counted per {'+'.join(limit.key_by)}"
        raise CannotUnblock(
            f"The limit {limit.name} is not counted per customer ({shared}), so resetting it for "
            f"{customer} would reset it for everyone who shares the counter."
        )
    store = store or engine_store()
    # Redis last inside the transaction: if it fails, the PostgreSQL rows stay and no history is written.
    with transaction.atomic():
        fallback = _fallback_rows_delete(customer, limit)
        records, allocation_sets = _rebuild_rows_delete(customer, limit)
        try:
            deleted = counter_keys_delete(store, customer_counter_keys(store, customer, limit))
        except redis.RedisError as error:
            raise CountersUnavailable(f"Redis did not answer, so nothing was reset ({error}). Try again.") from error
        report = UnblockReport(customer, limit.name, deleted, fallback, records, allocation_sets)
        _history_record(actor, report)
    return report


def _fallback_rows_delete(customer: str, limit: LimitConfig) -> int:
    head = customer_key_head(fallback_layout.prefix, customer)
    rows = FallbackCounter.objects.filter(key__startswith=head).values_list("pk", "key")
    wanted = [pk for pk, key in rows if is_limit_key(key[len(head) :], limit)]
    return FallbackCounter.objects.filter(pk__in=wanted).delete()[0] if wanted else 0


def _rebuild_rows_delete(customer: str, limit: LimitConfig) -> tuple[int, int]:
    """The limit's counter records and allocation sets of `customer` (counters named without the store prefix)."""
    head = _NAMES.counter_id(_NAMES.customer_counters_head(customer))
    records = CounterRecord.objects.filter(counter__startswith=head).values_list("pk", "counter")
    wanted = [pk for pk, counter in records if is_limit_key(counter[len(head) :], limit)]
    records_deleted = CounterRecord.objects.filter(pk__in=wanted).delete()[0] if wanted else 0
    sets = AllocationSet.objects.filter(customer=customer, limit=limit.name).values_list("pk", "counter")
    wanted = [pk for pk, counter in sets if is_limit_key(counter[len(head) :], limit)]
    sets_deleted = AllocationSet.objects.filter(pk__in=wanted).delete()[1].get(AllocationSet._meta.label, 0)
    return records_deleted, sets_deleted


def _history_record(actor: str, report: UnblockReport) -> None:
    from apps.history.services import history_record_event

    history_record_event(
        actor=actor,
        action=HISTORY_ACTION,
        target=f"customer {report.customer}, limit {report.limit}",
        details={
            "customer": report.customer,
            "limit": report.limit,
            "counters_deleted": report.counters_deleted,
            "fallback_rows_deleted": report.fallback_rows_deleted,
            "records_deleted": report.records_deleted,
            "allocation_sets_deleted": report.allocation_sets_deleted,
        },
    )
