"""After an outage: counters spent on outside Redis are rebuilt in Redis from their records.

While Redis was away the `database` and `local` policies admitted checks and recorded what they spent
(CounterRecord), naming each counter in RebuildPending. When Redis answers again, with its data or without,
its copy of those counters lacks that spending: `counters_reconcile` deletes them there and resets the
store's epoch, so the next check rebuilds each from its records (one extra round trip per counter, once).
It runs before the first call that succeeds after a failure (store.engine_call) and with every usage flush.
What Redis had counted but not yet flushed before the outage is lost with the deleted counters: the same
bound as after a Redis loss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from apps.enforcement.models import RebuildPending
from apps.engine import Store

BATCH = 1000


@dataclass
class Spending:
    """What the policy admitted in one transaction: counter records to add, counters Redis must rebuild."""

    records: dict[tuple[str, int], int] = field(default_factory=dict)
    counters: set[str] = field(default_factory=set)

    def add(self, counter: str, start: int, amount: int) -> None:
        self.record(counter, start, amount)
        self.counters.add(counter)

    def record(self, counter: str, start: int, amount: int) -> None:
        """Add a record only: what a hybrid counter (decided outside Redis, docs/hybrid.md) spent in the bucket at
        `start`. Redis holds no copy of it to rebuild, so the counter is not named for a rebuild."""
        self.records[(counter, start)] = self.records.get((counter, start), 0) + amount

    def merge(self, others: Iterable[Spending]) -> None:
        for other in others:
            for (counter, start), amount in other.records.items():
                self.record(counter, start, amount)
            self.counters |= other.counters


def rebuilds_mark(*, counters: Iterable[str]) -> None:
    """Name counters Redis must rebuild (inside the caller's transaction)."""
    names = sorted(set(counters))
    if names:
        RebuildPending.objects.bulk_create([RebuildPending(counter=name) for name in names], ignore_conflicts=True)


def counters_reconcile(*, store: Store) -> int:
    """Delete the pending counters from `store` and reset its epoch; how many. Raises the store's errors,
    leaving them pending."""
    done = 0
    while True:
        with transaction.atomic():
            pending = list(RebuildPending.objects.select_for_update(skip_locked=True).order_by("pk")[:BATCH])
            if not pending:
                return done
            store.counters_forget([row.counter for row in pending])
            RebuildPending.objects.filter(pk__in=[row.pk for row in pending]).delete()
        done += len(pending)
