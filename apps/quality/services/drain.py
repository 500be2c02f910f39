"""Moving the decision log from its capped Redis streams into DecisionEvent, at least once and stored once.

Per stream (SCAN of every master for `<prefix>:dlog:*`; on a Redis Cluster every primary), from its start:
  1. XRANGE a page of up to PAGE entries;
  2. insert them (INSERT ... ON CONFLICT DO NOTHING on (slot, entry_id, at)): committed on return;
  3. XTRIM MINID just past the last id of the page: what is in PostgreSQL leaves Redis.
A drain stopped between 2 and 3 leaves the page in Redis; the next one reads it again and inserts nothing
twice. The check scripts keep adding at the end meanwhile: the trim only removes ids up to the last one read.
An entry the stream's cap (XADD MAXLEN ~) trimmed before a drain is lost: the loss check (losses.py)
finds it by comparing what was drained with the usage counters' `logged`. An entry that cannot be parsed is
counted as malformed and trimmed with its page, so it cannot block the stream.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from redis.cluster import RedisCluster

from apps.engine.decision_log import LOG_MATCH, LogEntry, parse_entry
from apps.quality.models import DecisionEvent
from apps.quality.services.partitions import log_partitions_ensure

logger = logging.getLogger(__name__)

PAGE = 5000  # entries per XRANGE and per INSERT
SCAN_COUNT = 1000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NUMBERS = ("cost", "quantity", "period_ms", "burst", "window_ms", "prev_window_ms", "prev_count", "sync_ms")
# Called after "inserted" and "trimmed" with the stream; tests raise in it to stand for a killed worker.
Checkpoint = Callable[[str, str], None]


@dataclass(slots=True)
class DrainReport:
    streams: int = 0
    read: int = 0
    inserted: int = 0
    malformed: int = 0
    trimmed: int = 0
    failed_streams: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every stream was drained to where it stood when the drain reached it."""
        return not self.failed_streams

    @property
    def summary(self) -> str:
        text = (
            f"drained {self.read} log entries from {self.streams} streams: {self.inserted} stored,"
            f" {self.read - self.inserted - self.malformed} already stored, {self.malformed} malformed;"
            f" {self.trimmed} trimmed from Redis"
        )
        if self.failed_streams:
            text += f"; {len(self.failed_streams)} streams failed: {', '.join(self.failed_streams[:5])}"
        return text


def _no_checkpoint(step: str, stream: str) -> None:
    return None


def decision_log_drain(
    *, client: Any, prefix: str, page: int = PAGE, checkpoint: Checkpoint = _no_checkpoint
) -> DrainReport:
    """Drain every log stream under `prefix` on `client` (redis.Redis or RedisCluster) into DecisionEvent.

    A stream that fails (Redis or PostgreSQL away, one shard down) is named in the report and left for the
    next run; the others are drained.
    """
    log_partitions_ensure()
    report = DrainReport()
    for stream in log_streams(client, prefix):
        report.streams += 1
        try:
            _drain_stream(client, stream, page, checkpoint, report)
        except Exception as error:  # noqa: BLE001 - a failed stream must not stop the others
            logger.warning("decision log drain: stream %s left for the next run: %s", stream, error)
            report.failed_streams.append(stream)
    busy = report.read or report.failed_streams  # an idle drain (every minute) stays at debug
    (logger.info if busy else logger.debug)("decision log drain: %s", report.summary)
    return report


def log_streams(client: Any, prefix: str) -> list[str]:
    """Every log stream under `prefix`, sorted: SCAN of the one Redis, or of every primary of a cluster."""
    match = prefix + LOG_MATCH
    if isinstance(client, RedisCluster):
        found = client.scan_iter(match=match, count=SCAN_COUNT, target_nodes=RedisCluster.PRIMARIES)
    else:
        found = client.scan_iter(match=match, count=SCAN_COUNT)
    return sorted({_text(key) for key in found})


def _drain_stream(client: Any, stream: str, page: int, checkpoint: Checkpoint, report: DrainReport) -> None:
    start = "-"
    while True:
        entries = client.xrange(stream, min=start, max="+", count=page)
        if not entries:
            return
        rows, malformed = _rows(stream, entries)
        # ignore_conflicts tells nothing of what it skipped: what a killed drain stored already is counted first.
        stored = DecisionEvent.objects.filter(slot=stream, entry_id__in=[row.entry_id for row in rows]).count()
        DecisionEvent.objects.bulk_create(rows, batch_size=page, ignore_conflicts=True)
        checkpoint("inserted", stream)
        last = _text(entries[-1][0])
        report.read += len(entries)
        report.inserted += len(rows) - stored
        report.malformed += malformed
        report.trimmed += int(client.xtrim(stream, minid=id_after(last), approximate=False))
        checkpoint("trimmed", stream)
        if len(entries) < page:
            return
        start = id_after(last)


def id_after(entry_id: str) -> str:
    """The smallest stream id greater than `entry_id` ("ms-seq" -> "ms-(seq+1)")."""
    ms, _, seq = entry_id.partition("-")
    return f"{ms}-{int(seq or 0) + 1}"


def _rows(stream: str, entries: list[tuple[Any, dict[Any, Any]]]) -> tuple[list[DecisionEvent], int]:
    rows, malformed = [], 0
    for entry_id, fields in entries:
        try:
            entry = parse_entry(_text(entry_id), {_text(name): _text(value) for name, value in fields.items()})
        except (ValueError, UnicodeDecodeError):
            malformed += 1
            continue
        rows.append(event_row(stream, entry))
    return rows, malformed


def event_row(stream: str, entry: LogEntry) -> DecisionEvent:
    """The unsaved DecisionEvent of `entry` drained from `stream` (NUL bytes, which PostgreSQL text cannot
    hold, dropped from the texts)."""
    texts = {
        name: _clean(getattr(entry, name))
        for name in ("kind", "customer", "operation", "limit", "algorithm", "key", "mode", "instance", "lease")
    }
    numbers = {name: getattr(entry, name) for name in NUMBERS}
    return DecisionEvent(
        slot=_clean(stream),
        entry_id=entry.entry_id,
        at=EPOCH + dt.timedelta(milliseconds=entry.at_ms),
        shadow=entry.shadow,
        expires_ms=entry.expires_ms,
        **texts,
        **numbers,
    )


def at_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch of `moment`, exactly (no float)."""
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def _clean(text: str) -> str:
    return text.replace("\x00", "")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def stream_entries(client: Any, stream: str) -> Iterator[tuple[str, dict[str, str]]]:
    """Every entry of `stream`, oldest first, decoded (for tests and operators)."""
    for entry_id, fields in client.xrange(stream):
        yield _text(entry_id), {_text(name): _text(value) for name, value in fields.items()}
