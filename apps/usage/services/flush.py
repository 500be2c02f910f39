"""Moving completed minutes of usage from the counter store into UsageMinute, exactly once.

Per minute, in this order:
  1. read the minute's rows from the store;
  2. in one transaction: insert the minute's FlushedMinute claim (unique), then add the rows (one per customer x
     operation x calling service x API key: the store's usage keys, apps/engine/keys.py; keys of the layout
     before the service was counted flush as service "") into UsageMinute (added to any row already there,
     costs per unit) and their counter records into
     CounterRecord (services/records.py);
  3. commit; 4. tell the store to discard the minute.
A crash before 3 rolls everything back and the minute stays in the store for the next run. A crash
between 3 and 4 leaves a committed claim: the next run sees it and only discards. Two runs at once
both try to insert the claim; the unique constraint lets one commit and rolls the other back.

A row the database refuses on its own (a NUL byte in a customer id: PostgreSQL text cannot hold one) would
fail step 2 on every run until its usage expires from the store, and every minute after it would wait. So
when step 2 is refused, it runs again sifting the rows (apps/common/quarantine.py): the refused ones go to
QuarantinedUsage in the same transaction as the claim and the others, the rest is added, and the minute
is discarded as usual. Exactly once still holds: each row of the minute is either added or quarantined, in
one commit. Any other error (PostgreSQL away) quarantines nothing and leaves the minute for the next run.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from apps.common.quarantine import UNWRITABLE, Sifted, key_shown, rows_quarantined, rows_sift
from apps.engine import Store
from apps.engine.store.base import UsageRow
from apps.usage.models import FlushedMinute, UsageMinute
from apps.usage.services.minutes import add_into, usage_minutes_add
from apps.usage.services.partitions import usage_partitions_ensure
from apps.usage.services.quarantine import UsageKey, usage_quarantine_add
from apps.usage.services.records import Reach, counter_records_add, merged_records
from apps.usage.vocabulary import AMOUNTS

__all__ = ["FlushReport", "add_into", "minute_start", "usage_flush"]  # add_into: minutes.py

logger = logging.getLogger(__name__)

MINUTE_MS = 60_000
# Minutes this close to now are left in the store: the current minute is still being counted, and
# this host's clock may run ahead of the store's (checks count usage in the minute of Redis server
# time). A count written into a minute after its flush would be discarded with it, so the margin must
# exceed any skew between the two clocks.
SAFETY_MARGIN_MINUTES = 1

WRITER = "usage_flush"  # the quarantine's writer label
# Quarantined keys a report names; the count covers them all.
KEYS_SHOWN = 10

Checkpoint = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class FlushReport:
    minutes: int = 0
    rows: int = 0
    already_flushed: int = 0
    lost_race: int = 0
    quarantined: int = 0
    quarantined_keys: tuple[str, ...] = ()  # repr() of (customer, operation, minute) (key_shown), the first few

    @property
    def summary(self) -> str:
        text = (
            f"flushed {self.minutes} minutes, {self.rows} rows; {self.already_flushed} already flushed"
            f" (discarded only), {self.lost_race} taken by another run at the same time"
        )
        if self.quarantined:
            more = self.quarantined - len(self.quarantined_keys)
            text += (
                f"; {self.quarantined} row{'s' if self.quarantined > 1 else ''} quarantined (refused by the"
                f" database, kept in QuarantinedUsage): {', '.join(self.quarantined_keys)}"
                + (f" and {more} more" if more > 0 else "")
            )
        return text


@dataclass(frozen=True, slots=True)
class _Outcome:
    kind: str  # "flushed" | "already" | "raced"
    rows: int = 0
    quarantined: tuple[UsageKey, ...] = ()


def _no_checkpoint(step: str, minute: int) -> None:
    return None


def minute_start(minute: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC)


def usage_flush(
    *, store: Store, now_ms: int | None = None, checkpoint: Checkpoint = _no_checkpoint, reach: Reach | None = None
) -> FlushReport:
    """Flush every minute older than the current one minus the safety margin (see the module docstring).

    checkpoint(step, minute) is called after each step ("read", "claimed", "added", "committed",
    "discarded"); tests make it raise to stand for a worker killed at that point. reach: how long each
    counter's records matter (services/records.py).
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    # Today's and the next days' partitions (PostgreSQL); a catalog read when they are there already.
    usage_partitions_ensure()
    horizon = now_ms // MINUTE_MS - SAFETY_MARGIN_MINUTES
    minutes = [minute for minute in store.usage_minutes() if minute < horizon]
    outcomes = [_flush_minute(store, minute, checkpoint, reach) for minute in minutes]
    quarantined = [key for outcome in outcomes for key in outcome.quarantined]
    report = FlushReport(
        minutes=sum(1 for outcome in outcomes if outcome.kind == "flushed"),
        rows=sum(outcome.rows for outcome in outcomes),
        already_flushed=sum(1 for outcome in outcomes if outcome.kind == "already"),
        lost_race=sum(1 for outcome in outcomes if outcome.kind == "raced"),
        quarantined=len(quarantined),
        quarantined_keys=tuple(key_shown(key) for key in quarantined[:KEYS_SHOWN]),
    )
    if report.minutes or report.already_flushed or report.lost_race or report.quarantined:
        logger.info("usage flush: %s", report.summary)
    else:
        # Every minute, on an idle platform: not worth a line at INFO.
        logger.debug("usage flush: nothing to flush")
    return report


def _flush_minute(store: Store, minute: int, checkpoint: Checkpoint, reach: Reach | None) -> _Outcome:
    if FlushedMinute.objects.filter(minute=minute).exists():
        # A previous run committed this minute but did not get to discard it.
        store.usage_discard(minute)
        checkpoint("discarded", minute)
        return _Outcome("already")
    rows = store.usage_rows(minute)
    checkpoint("read", minute)
    try:
        try:
            refused = _claim_and_add(minute, rows, checkpoint, reach, sift=False)
        except UNWRITABLE:
            # A row the database refuses on its own: set it aside and add the others (module docstring).
            refused = _claim_and_add(minute, rows, checkpoint, reach, sift=True)
    except IntegrityError:
        if not FlushedMinute.objects.filter(minute=minute).exists():
            raise
        # Another run claimed the minute while this one was reading it; that run discards it.
        return _Outcome("raced")
    rows_quarantined(writer=WRITER, keys=[(key, reason) for key, _, reason in refused])
    checkpoint("committed", minute)
    store.usage_discard(minute)
    checkpoint("discarded", minute)
    return _Outcome("flushed", len(rows) - len(refused), tuple(key for key, _, _ in refused))


def _claim_and_add(
    minute: int, rows: list[UsageRow], checkpoint: Checkpoint, reach: Reach | None, *, sift: bool
) -> list[tuple[UsageKey, UsageRow, str]]:
    """Steps 2 and 3 of the module docstring, the refused rows quarantined if `sift`; those rows."""
    with transaction.atomic():
        claim = FlushedMinute.objects.create(minute=minute, rows=len(rows))
        checkpoint("claimed", minute)
        sifted = rows_sift(rows, lambda part: _add_rows(minute, part, reach)) if sift else Sifted(good=rows)
        _add_rows(minute, sifted.good, reach)
        refused = [((row.customer, row.operation, row.minute), row, reason) for row, reason in sifted.bad]
        if refused:
            FlushedMinute.objects.filter(pk=claim.pk).update(rows=len(sifted.good))
            usage_quarantine_add(writer=WRITER, rows=refused)
        checkpoint("added", minute)
    return refused


def _add_rows(minute: int, rows: Sequence[UsageRow], reach: Reach | None) -> None:
    """Add `rows` into the minute's UsageMinute rows and their records into CounterRecord (inside the
    caller's transaction).

    Additive per row in the database (minutes.py): the minute's claim keeps every other flush out, but the
    decisions made without the store (decisions.py) may add into the same rows at the same time.
    """
    bucket = minute_start(minute)
    # A row without a customer only carries records (a Redis Cluster slot's part of a check); one that counts
    # nothing is a minute a lease was booked into and given back when released early (session_ms netted to 0).
    usage_minutes_add(rows=[_model_of(bucket, row) for row in rows if row.customer and _counts(row)])
    counter_records_add(records=merged_records([row.records for row in rows]), reach=reach)


def _counts(row: UsageRow) -> bool:
    return any(getattr(row, name, 0) for name in AMOUNTS) or any(row.costs.values())


def _model_of(bucket: dt.datetime, row: UsageRow) -> UsageMinute:
    return UsageMinute(
        customer=row.customer,
        operation=row.operation,
        service=row.service,
        api_key=row.api_key,
        bucket=bucket,
        costs=dict(row.costs),
        # The amounts the store counts (allowed, denied, shadow_denied, session_ms, logged); the others are
        # decisions made without it (decisions.py) and stay 0 here.
        **{name: getattr(row, name, 0) for name in AMOUNTS},
    )
