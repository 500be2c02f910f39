"""The decision ledger: every decision's usage, and what it spent on durable counters, on its way to PostgreSQL.

Redis keeps counters; usage is tallied in the process that decided (tally.py for what a store decided, `add` for
access rules, the failure policies while Redis is away, hybrid checks and the SDK's reports) and written every
QUOTA_LEDGER_FLUSH_S seconds in one transaction per round (usage rows, counter records, rebuild marks, this
writer's heartbeat), and once more on a graceful exit (shutdown.py). The pending amounts are summed per customer x
operation x calling service x API key x minute as they come: a round writes one row per such key, however many
decisions it holds. A round that fails keeps everything for the next one, in front of what came meanwhile; a round
takes what it writes under the lock, so a decision is in exactly one round. A process killed outright loses what
it had not written yet, at most one interval of it: its writer row goes silent and the minutes it may have left
incomplete are marked (apps/usage/services/writers.py).

A row the database refuses on its own (a NUL byte in a customer id) is not kept for the next round: it would fail
every round and hold every other decision back with it, in a pile that only grows. The write sifts the rows
(apps/common/quarantine.py), adds the others and stores the refused ones in QuarantinedUsage, in one transaction.
Any other failure keeps them all pending, as before.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction

from apps.common.background import PeriodicThread
from apps.common.quarantine import UNWRITABLE, Sifted, rows_quarantined, rows_sift
from apps.enforcement.counters.recovery import Spending, rebuilds_mark
from apps.enforcement.decisions.specs import counter_reach_ms
from apps.engine import CheckItem
from apps.engine.decision_usage import Record
from apps.engine.store.plan import usage_costs
from apps.usage.services import DecisionCounts, counter_records_add, usage_decisions_add
from apps.usage.services.quarantine import usage_quarantine_add
from apps.usage.services.writers import writer_flushed, writer_name
from apps.usage.vocabulary import CHECKS, checks

logger = logging.getLogger(__name__)
MINUTE_MS = 60_000
WRITER = "decision_ledger"  # the quarantine's writer label
OUTCOMES = CHECKS  # a decision is counted in exactly one of these (apps/usage/vocabulary.py)

# The amounts of a pending row, by position: the outcomes first, so an outcome's position is its index in OUTCOMES.
FIELDS: tuple[str, ...] = (*OUTCOMES, "shadow_denied", "degraded", "logged", "local_denied")
POSITION = {name: n for n, name in enumerate(FIELDS)}
ALLOWED, DENIED, SHADOW, LOGGED = POSITION["allowed"], POSITION["denied"], POSITION["shadow_denied"], POSITION["logged"]
Key = tuple[str, str, str, str, int]  # customer, operation, service, api_key, minute


def decision_counts(item: CheckItem, outcome: str, *, degraded: bool, now_ms: int) -> DecisionCounts:
    """One decision as usage counts: its outcome (one of OUTCOMES), and the costs when it was allowed, in the row
    of the item's calling service and key prefix (named_resolve fills them in from the authenticated key).
    `degraded`: decided by a failure policy (allowed or denied only: a 503 is counted as unavailable)."""
    costs = dict(usage_costs(item)) if outcome == "allowed" else {}
    counts = {name: int(name == outcome) for name in OUTCOMES}
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


def decisions_write(rows: list[DecisionCounts], spending: Spending, writer: str = "") -> int:
    """Add decision counts, and what they spent on durable counters, in one transaction (with `writer`'s
    heartbeat, when named); how many decisions were added. Rows the database refuses on their own are quarantined
    instead (module docstring)."""
    try:
        return _decisions_add(rows, spending, writer, sift=False)
    except UNWRITABLE:
        return _decisions_add(rows, spending, writer, sift=True)


def _decisions_add(rows: list[DecisionCounts], spending: Spending, writer: str, *, sift: bool) -> int:
    with transaction.atomic():
        sifted = rows_sift(rows, lambda part: usage_decisions_add(rows=part)) if sift else Sifted(good=rows)
        usage_decisions_add(rows=sifted.good)
        counter_records_add(records=spending.records, reach=counter_reach_ms)
        rebuilds_mark(counters=spending.counters)
        refused = [((row.customer, row.operation, row.minute), row, reason) for row, reason in sifted.bad]
        usage_quarantine_add(writer=WRITER, rows=refused)
        if writer:
            writer_flushed(name=writer, interval_s=settings.QUOTA_LEDGER_FLUSH_S)
    rows_quarantined(writer=WRITER, keys=[(key, reason) for key, _, reason in refused])
    return sum(checks(row) for row in sifted.good)


class DecisionLedger:
    def __init__(self) -> None:
        self._counts: dict[Key, list[int]] = {}
        self._costs: dict[Key, dict[str, int]] = {}
        self._spending = Spending()
        self._lock = threading.Lock()
        # One round at a time: a last round on exit waits for one in flight (a daemon thread dies with the process,
        # its transaction rolled back), and then writes what came after it.
        self._rounds = threading.Lock()
        self._thread: PeriodicThread | None = None
        self.writer = ""  # this process's name among the usage writers, once it has written (writers.py)
        self.closed = False  # the process is ending (shutdown.py): rounds write what is pending, no heartbeat

    def count(
        self, key: Key, outcome: int, shadow: bool, logged: int, costs: Iterable[tuple[str, int]], records: list[Record]
    ) -> None:
        """Count one decision (the hot path, tally.py): `outcome` is its position in FIELDS (ALLOWED, DENIED, ...),
        `costs` what it admitted per unit, `records` what it spent on durable counters."""
        with self._lock:
            row = self._counts.get(key)
            if row is None:
                row = self._counts[key] = [0] * len(FIELDS)
            row[outcome] += 1
            if shadow:
                row[SHADOW] += 1
            if logged:
                row[LOGGED] += logged
            if costs:
                held = self._costs.get(key)
                if held is None:
                    held = self._costs[key] = {}
                for unit, amount in costs:
                    held[unit] = held.get(unit, 0) + amount
            for (counter, start), amount in records:
                self._spending.record(counter, start, amount)
        if self._thread is None:
            self._started()

    def add(self, counts: DecisionCounts, spending: Spending | None = None) -> None:
        """Count decisions made without a store's answer (and what they spent on durable counters)."""
        key = (counts.customer, counts.operation, counts.service, counts.api_key, counts.minute)
        with self._lock:
            row = self._counts.setdefault(key, [0] * len(FIELDS))
            for n, name in enumerate(FIELDS):
                row[n] += getattr(counts, name)
            held = self._costs.setdefault(key, {})
            for unit, amount in counts.costs.items():
                held[unit] = held.get(unit, 0) + amount
            if spending is not None:
                self._spending.merge([spending])
        self._started()

    def spend(self, spending: Spending) -> None:
        """Record what a decision counted elsewhere spent on durable counters, for the next write."""
        with self._lock:
            self._spending.merge([spending])
        self._started()

    def pending_rows(self) -> list[DecisionCounts]:
        """What the next round would write, one row per customer x operation x service x key x minute."""
        with self._lock:
            return [_row(key, list(amounts), dict(self._costs.get(key, {}))) for key, amounts in self._counts.items()]

    def _started(self) -> None:
        if self._thread is None and settings.QUOTA_LEDGER_FLUSH_S > 0:
            self._start()

    def flush(self) -> int:
        """Write what is pending in one transaction; on failure it stays pending. How many decisions were written
        (those the database refuses on their own are quarantined, not written). A process that has written once
        writes a round even with nothing pending: its heartbeat (writers.py)."""
        with self._rounds:
            return self._round()

    def _round(self) -> int:
        with self._lock:
            counts, costs, spending = self._counts, self._costs, self._spending
            self._counts, self._costs, self._spending = {}, {}, Spending()
        beating = not self.closed and self._thread is not None
        if not counts and not spending.records and not (beating and self.writer):
            return 0
        rows = [_row(key, amounts, costs.get(key, {})) for key, amounts in counts.items()]
        if not self.closed:
            self.writer = self.writer or writer_name()
        try:
            return decisions_write(rows, spending, "" if self.closed else self.writer)
        except Exception:
            with self._lock:  # keep them for the next round, in front of what came meanwhile
                self._merge_back(counts, costs, spending)
            raise

    def _merge_back(self, counts: dict[Key, list[int]], costs: dict[Key, dict[str, int]], spending: Spending) -> None:
        for key, amounts in counts.items():
            row = self._counts.setdefault(key, [0] * len(FIELDS))
            for n, amount in enumerate(amounts):
                row[n] += amount
        for key, units in costs.items():
            held = self._costs.setdefault(key, {})
            for unit, amount in units.items():
                held[unit] = held.get(unit, 0) + amount
        self._spending.merge([spending])

    def forked(self) -> None:
        """In a child made by fork (shutdown.py): start empty, without the parent's thread and writer name."""
        self._lock, self._rounds = threading.Lock(), threading.Lock()
        self._counts, self._costs, self._spending = {}, {}, Spending()
        self._thread, self.writer, self.closed = None, "", False

    def discard(self) -> None:
        """Forget what is pending, unwritten (tests start each with an empty ledger)."""
        with self._lock:
            self._counts, self._costs, self._spending = {}, {}, Spending()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = PeriodicThread("decision-ledger", self.flush, lambda: settings.QUOTA_LEDGER_FLUSH_S)
                self._thread.start()
        from apps.enforcement.ledger.shutdown import flush_on_exit

        flush_on_exit()


def _row(key: Key, amounts: list[int], costs: dict[str, int]) -> DecisionCounts:
    customer, operation, service, api_key, minute = key
    named = dict(zip(FIELDS, amounts, strict=True))
    return DecisionCounts(customer, operation, minute, costs=costs, service=service, api_key=api_key, **named)


decision_ledger = DecisionLedger()
# What the parent holds is the parent's to write: a forked child (a Celery prefork worker) starts empty.
os.register_at_fork(after_in_child=decision_ledger.forked)
