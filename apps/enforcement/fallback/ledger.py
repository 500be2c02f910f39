"""Decisions made without Redis reach the usage tables through this in-process ledger.

Redis counts the decisions it makes inside its script. The others (access rules, the `open`, `local` and
`closed` failure policies while Redis is away, and refusals by the `database` policy) are counted here and
written every QUOTA_LEDGER_FLUSH_S seconds and when the process exits; a write that fails is kept for the next
round. (What the `database` policy admits is written in its own transaction instead: fallback/decide.py.) A
process killed outright loses what it had not written yet: at most QUOTA_LEDGER_FLUSH_S seconds of them.

A row the database refuses on its own (a NUL byte in a customer id) is not kept for the next round: it would
fail every round and hold every other decision back with it, in a pile that only grows. The write sifts the
rows (apps/common/quarantine.py), adds the others and stores the refused ones in QuarantinedUsage, in one
transaction. Any other failure keeps them all pending, as before.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.common.background import PeriodicThread
from apps.common.quarantine import UNWRITABLE, Sifted, rows_quarantined, rows_sift
from apps.enforcement.counters.recovery import Spending, rebuilds_mark
from apps.enforcement.decisions.specs import counter_reach_ms
from apps.engine import CheckItem
from apps.engine.store.plan import usage_costs
from apps.usage.services import DecisionCounts, counter_records_add, usage_decisions_add
from apps.usage.services.quarantine import usage_quarantine_add
from apps.usage.vocabulary import CHECKS

logger = logging.getLogger(__name__)
MINUTE_MS = 60_000
WRITER = "decision_ledger"  # the quarantine's writer label
OUTCOMES = CHECKS  # a decision is counted in exactly one of these (apps/usage/vocabulary.py)

Key = tuple[str, str, int]  # customer, operation, minute


def decision_counts(item: CheckItem, outcome: str, *, degraded: bool, now_ms: int) -> DecisionCounts:
    """One decision as usage counts: its outcome (one of OUTCOMES), and the costs when it was allowed, in the row
    of the item's calling service and key prefix (named_resolve fills them in from the authenticated key).
    `degraded`: decided by a failure policy (allowed or denied only: a 503 is counted as unavailable)."""
    costs = dict(usage_costs(item)) if outcome == "allowed" else {}
    counts: dict[str, Any] = {name: int(name == outcome) for name in OUTCOMES}
    return DecisionCounts(
        item.customer,
        item.operation,
        now_ms // MINUTE_MS,
        degraded=int(degraded),
        costs=costs,
        service=item.service,
        api_key=item.api_key,
        **counts,
    )


def decisions_write(rows: list[DecisionCounts], spending: Spending) -> int:
    """Add decision counts, and what they spent on durable counters, in one transaction; how many rows were
    added. Rows the database refuses on their own are quarantined instead (module docstring)."""
    try:
        return _decisions_add(rows, spending, sift=False)
    except UNWRITABLE:
        return _decisions_add(rows, spending, sift=True)


def _decisions_add(rows: list[DecisionCounts], spending: Spending, *, sift: bool) -> int:
    with transaction.atomic():
        sifted = rows_sift(rows, lambda part: usage_decisions_add(rows=part)) if sift else Sifted(good=rows)
        usage_decisions_add(rows=sifted.good)
        counter_records_add(records=spending.records, reach=counter_reach_ms)
        rebuilds_mark(counters=spending.counters)
        refused = [((row.customer, row.operation, row.minute), row, reason) for row, reason in sifted.bad]
        usage_quarantine_add(writer=WRITER, rows=refused)
    rows_quarantined(writer=WRITER, keys=[(key, reason) for key, _, reason in refused])
    return len(sifted.good)


class DecisionLedger:
    def __init__(self) -> None:
        self._rows: list[DecisionCounts] = []
        self._spending = Spending()
        self._lock = threading.Lock()
        self._thread: PeriodicThread | None = None

    def add(self, counts: DecisionCounts, spending: Spending | None = None) -> None:
        """Count one decision (and what it spent on durable counters) for the next write."""
        with self._lock:
            self._rows.append(counts)
            if spending is not None:
                self._spending.merge([spending])
        self._started()

    def spend(self, spending: Spending) -> None:
        """Record what a decision counted elsewhere (by Redis) spent on durable counters, for the next write."""
        with self._lock:
            self._spending.merge([spending])
        self._started()

    def _started(self) -> None:
        if self._thread is None and settings.QUOTA_LEDGER_FLUSH_S > 0:
            self._start()

    def flush(self) -> int:
        """Write what is pending; on failure it stays pending. How many decisions were written (those the
        database refuses on their own are quarantined, not written)."""
        with self._lock:
            rows, spending = self._rows, self._spending
            self._rows, self._spending = [], Spending()
        if not rows and not spending.records:
            return 0
        try:
            written = decisions_write(rows, spending)
        except Exception:
            with self._lock:  # keep them for the next round, in front of what came meanwhile
                self._rows[:0] = rows
                self._spending.merge([spending])
            raise
        return written

    def discard(self) -> None:
        """Forget what is pending, unwritten (tests start each with an empty ledger)."""
        with self._lock:
            self._rows, self._spending = [], Spending()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = PeriodicThread("decision-ledger", self.flush, lambda: settings.QUOTA_LEDGER_FLUSH_S)
                self._thread.start()
                atexit.register(self._flush_at_exit)

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            logger.exception("Could not write the last decisions counted without Redis")


decision_ledger = DecisionLedger()
