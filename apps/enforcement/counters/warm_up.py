"""The warm-up after Redis comes up empty: every durable counter of an open window rebuilt in bulk, then the epoch
marked warm, so checks stop asking PostgreSQL.

Without it, after an empty restart the first check of every durable counter of an open window asks its seeder (two
script calls and a PostgreSQL query), for a whole day on daily quotas. `counters_warm` reads the records of every
counter whose look-back is still open (CounterRecord.until_ms after now) grouped per counter, finds each counter's
limit (warm_specs.py), rebuilds it with seed_text (the per-counter seeding's own rebuild), adds every lease set's
allocations kept in PostgreSQL (leases/durable.py), writes them in chunks, each only while it is missing, and marks
the epoch warm last (apps/engine/store/warm.py): from then on a missing lease set is an empty one. From then on
check.lua takes a missing durable counter for a new one: one script call, no PostgreSQL. Until the mark is there the
per-counter seeding keeps every check right, and a counter it rebuilt (or a check spent on) first is kept.
counters_reconcile deletes the mark with the epoch it resets, so the next run warms that epoch again.

Who runs it: the beat job `warm_counters` every few seconds (apps/ops/jobs.py), which costs one GET while the mark
is there (an MGET of the customers' marks on a Cluster); a run asked for when a check first needs a seed
(`warm_up_wanted` in warm_trigger.py, wired to the Celery task by apps/ops); `manage.py warm_counters` by hand.
One runner at a time: a PostgreSQL advisory lock, which another runner finding taken skips.

What a loss costs anyway: spending not yet recorded in PostgreSQL when Redis lost it is granted again; a run that
finds Redis cold says so at WARNING, and counts itself in quota_counter_warm_ups.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from django.db import connection

from apps.common import metrics
from apps.enforcement.counters.warm_specs import CounterSpecs
from apps.enforcement.leases.durable import allocations_per_counter
from apps.engine import Store
from apps.engine.key_text import enc
from apps.engine.keys import limit_name_of
from apps.engine.registry import LEASE_SET
from apps.engine.store.seeds import allocations_text, seed_text
from apps.engine.store.warm import Chunk, Rebuilt, WarmWriter
from apps.limits.snapshot_holder import snapshot_current
from apps.usage.selectors import counter_histories_open

logger = logging.getLogger(__name__)

WARM_LOCK_ID = 0x7761_726D  # "warm"; any constant other advisory locks do not take
CHUNK = 500  # counters per warm.lua call: a few ms of Redis each, so checks wait little behind one
Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class WarmReport:
    """cold: epochs found without their warm mark (0: Redis was warm, nothing else done); counters: written back;
    present: already there (a check rebuilt or spent on them first); unmatched: no configured limit uses them any
    more; interrupted: epochs that changed meanwhile (the next run warms them); busy: another runner had the lock."""

    cold: int = 0
    counters: int = 0
    present: int = 0
    unmatched: int = 0
    interrupted: int = 0
    seconds: float = 0.0
    busy: bool = False

    @property
    def summary(self) -> str:
        if self.busy:
            return "another warm-up is running"
        if not self.cold:
            return "counters warm"
        return (
            f"warmed {self.cold - self.interrupted} of {self.cold} cold epoch(s): {self.counters} durable counters"
            f" rebuilt in {self.seconds:.2f} s ({self.present} already there, {self.unmatched} of no current limit)"
        )


def counters_warm(*, store: Store, counters: Sequence[str] = (), progress: Progress | None = None) -> WarmReport:
    """Warm `store`'s cold epochs (see the module docstring); nothing but one read when they are warm. counters: some
    counters a check asked seeds for, whose epochs are looked at too (on a Cluster, tags that are no customer's)."""
    writer: WarmWriter | None = getattr(store, "warm_writer", lambda: None)()
    if writer is None:  # the in-process store: its counters live and die with the process
        return WarmReport()
    snapshot = snapshot_current()
    # One epoch on a single Redis; on a Cluster one per tag: the customers' and those of the counters named.
    known = [writer.customer_tag(enc(customer)) for customer in snapshot.customers] if writer.cluster else [""]
    tags = [*known, *(writer.tag_of(counter) for counter in counters)]
    if not set(tags) - writer.warm_tags(tags):
        return WarmReport()
    with _runner() as alone:
        if not alone:
            return WarmReport(busy=True)
        started = time.monotonic()
        try:
            report = _Run(writer, CounterSpecs(snapshot, writer.layout, writer.now_ms()), progress).run(tags)
        except Exception:
            metrics.warm_up_recorded(outcome="failed", seconds=time.monotonic() - started, counters=0)
            raise
        report = dataclasses.replace(report, seconds=time.monotonic() - started)
        if report.cold:
            outcome = "interrupted" if report.interrupted else "done"
            metrics.warm_up_recorded(outcome=outcome, seconds=report.seconds, counters=report.counters)
            logger.info("warm-up: %s", report.summary)
        return report


class _Run:
    """One warm-up: the records streamed per counter, rebuilt, written per tag in chunks, the marks last."""

    def __init__(self, writer: WarmWriter, specs: CounterSpecs, progress: Progress | None) -> None:
        self.writer, self.specs, self.progress = writer, specs, progress
        self.now = specs.now_ms
        self.warm: dict[str, bool] = {}  # tag -> its mark was there when first looked at
        self.epochs: dict[str, str] = {}  # cold tag -> the epoch its writes must still find
        self.pending: dict[str, list[Rebuilt]] = {}
        self.pending_count = 0
        self.counted = {"counters": 0, "present": 0, "unmatched": 0}
        self.interrupted: set[str] = set()

    def run(self, tags: list[str]) -> WarmReport:
        self._look(tags)
        cold = [tag for tag in dict.fromkeys(tags) if not self.warm[tag]]
        if not cold:  # another runner warmed them between the first look and the lock
            return WarmReport()
        logger.warning(
            "Redis counters found cold (%d epoch(s) without their warm mark: Redis came up empty, lost a node, or was"
            " reset after an outage): rebuilding the durable counters of open windows from PostgreSQL. Spending not"
            " yet recorded when Redis lost it may be granted again.",
            len(cold),
        )
        self._begin(cold)
        self._add_counters()
        self._add_allocations()
        self._flush(marks=True)
        counted = self.counted
        return WarmReport(
            len(self.epochs),
            counters=counted["counters"],
            present=counted["present"],
            unmatched=counted["unmatched"],
            interrupted=len(self.interrupted),
        )

    def _add_counters(self) -> None:
        """Every durable counter of an open window, rebuilt from its records."""
        for counter, history in counter_histories_open(now_ms=self.now):
            tag = self._tag(counter)
            if tag is None:
                continue
            resolved = self.specs.resolve(counter, history)
            if resolved is None:
                self.counted["unmatched"] += 1
                continue
            self._add(tag, Rebuilt(counter, seed_text(resolved[0], resolved[1], history, self.now)))

    def _add_allocations(self) -> None:
        """The lease sets' allocations, kept in PostgreSQL: held until released, on the concurrency limits still
        there."""
        lease_limits = {
            limit.name
            for limits in self.specs.snapshot.limits_by_operation.values()
            for limit in limits
            if limit.algorithm == LEASE_SET.name
        }
        for counter, members in allocations_per_counter():
            if limit_name_of(counter) not in lease_limits:
                self.counted["unmatched"] += 1
                continue
            tag = self._tag(counter)
            if tag is not None:
                self._add(tag, Rebuilt(counter, allocations_text(members)))

    def _tag(self, counter: str) -> str | None:
        """The tag of `counter` when it is cold (its epoch begun), None when it is warm or was interrupted."""
        tag = self.writer.tag_of(counter)
        if tag not in self.warm:
            self._look([tag])
            self._begin([tag] if not self.warm[tag] else [])
        return None if self.warm[tag] or tag in self.interrupted else tag

    def _add(self, tag: str, rebuilt: Rebuilt) -> None:
        """Write `rebuilt` with the next chunk, unless it holds nothing ("<ttl>|": the counter starts empty)."""
        if rebuilt.text.endswith("|"):
            return
        self.pending.setdefault(tag, []).append(rebuilt)
        self.pending_count += 1
        if self.pending_count >= CHUNK:
            self._flush()

    def _look(self, tags: list[str]) -> None:
        found = self.writer.warm_tags(tags)
        self.warm.update({tag: tag in found for tag in tags})

    def _begin(self, tags: list[str]) -> None:
        if tags:
            self.epochs.update({tag: epoch for tag, (epoch, _) in self.writer.begin(tags, self.now).items()})

    def _flush(self, marks: bool = False) -> None:
        """The pending counters in chunks of one tag each (one pipeline); with `marks`, then every cold tag's mark."""
        chunks = [
            Chunk(tag, self.epochs[tag], counters[start : start + CHUNK])
            for tag, counters in self.pending.items()
            for start in range(0, len(counters), CHUNK)
        ]
        if marks:
            chunks += [Chunk(tag, epoch, (), mark=True) for tag, epoch in self.epochs.items()]
        self.pending, self.pending_count = {}, 0
        for chunk, written in zip(chunks, self.writer.write(chunks), strict=True):
            if written < 0:
                self.interrupted.add(chunk.tag)
                continue
            self.counted["counters"] += written
            self.counted["present"] += len(chunk.counters) - written
        if self.progress is not None:
            self.progress(self.counted["counters"] + self.counted["present"])


_thread_lock = threading.Lock()


@contextlib.contextmanager
def _runner() -> Iterator[bool]:
    """Whether this is the one runner: a PostgreSQL session advisory lock (whoever else runs, in any process), held
    while the warm-up runs; SQLite (make run) has one process, so a lock of this process."""
    if connection.vendor != "postgresql":
        alone = _thread_lock.acquire(blocking=False)
        try:
            yield alone
        finally:
            if alone:
                _thread_lock.release()
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [WARM_LOCK_ID])
        alone = bool(cursor.fetchone()[0])
    try:
        yield alone
    finally:
        if alone:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [WARM_LOCK_ID])
