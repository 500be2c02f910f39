"""This process's hybrid counters (counting.py decides on them): one per limit and key, made on first use with its
windows, its exchange with the other instances (apps/engine/hybrid_peers.py, or the embedded store) and, for a
durable limit, its records; exchanged every `sync_ms` by a background thread (TICK_S) so what this process admitted
reaches the others even when it goes quiet. Bounded: past MAX_COUNTERS the counters start over.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from typing import Any, NamedTuple

from django.conf import settings
from quota_client.hybrid import (
    FIXED,
    SLIDING,
    Exchange,
    Exchanged,
    HybridConfig,
    HybridCounter,
    Recorded,
    Windows,
    fixed_windows,
)

from apps.common import metrics
from apps.enforcement.counters.seeding import recorded_windows
from apps.enforcement.hybrid.stores import CLOCK, key_layout, peers_for, peers_reset
from apps.engine import CheckItem, LimitSpec
from apps.engine.hybrid_peers import RedisPeers, SyncLog, hybrid_key
from apps.engine.reference.zoned_windows import pick_window, window_bounds
from apps.engine.registry import ALGORITHMS
from apps.limits.algorithms import is_calendar
from apps.limits.snapshot import LimitConfig

# This worker process among the instances sharing a counter (a restarted process is a new instance).
INSTANCE = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
RETENTION_WINDOWS = 3  # an instance unseen this many windows is forgotten: its share returns to the others
MAX_COUNTERS = 100_000  # a bound on this process's memory; past it the counters start over
TICK_S = 0.05  # how often the background exchange looks for counters due (a due one exchanges at most this late)

_counters: dict[tuple[LimitConfig, str], Counted] = {}
_lock = threading.Lock()
_ticker: threading.Thread | None = None


class Counted(NamedTuple):
    """This process's counter of one limit and key, and its name in the records (None: not durable)."""

    counter: HybridCounter
    record: str | None


def counter_for(limit: LimitConfig, spec: LimitSpec, item: CheckItem) -> Counted:
    """This process's counter of `limit` for `item`'s key (made on first use), and its name in the records."""
    key, record = counter_names(spec, item)
    counted = _counters.get((limit, key))
    if counted is None:
        with _lock:
            counted = _counters.get((limit, key)) or _new_counter(limit, spec, key, record, item)
    return counted


def counter_names(spec: LimitSpec, item: CheckItem) -> tuple[str, str | None]:
    """The exchange hash of `spec`'s counter for `item` (the API workers' and the SDK limiters' alike: sync.py),
    and, for a durable limit, the counter's name in its records (the exact counter's, so a limit switched between
    exact and hybrid counting keeps its records)."""
    prefix = settings.QUOTA_KEY_PREFIX
    layout = key_layout(prefix)
    key = layout.counter_keys(spec, item)[0]
    return hybrid_key(key, prefix), layout.counter_id(key) if spec.durable else None


def recorded_of(record: str | None) -> Recorded | None:
    """The records a durable counter starts from when the store lost it (None: not durable)."""
    return None if record is None else recorded_windows(record, CLOCK.now_ms)


def exchange_log(limit: LimitConfig, spec: LimitSpec, item: CheckItem) -> SyncLog | None:
    """How the exchanges of `limit`'s counter for `item` are logged: a `sync` entry each when the limit has
    `audit: true` (the quality audit checks the documented bound from them), else None."""
    if not (limit.audit or spec.audit):
        return None
    prefix = settings.QUOTA_KEY_PREFIX
    key = key_layout(prefix).counter_keys(spec, item)[0]
    return SyncLog.of(
        spec,
        key,
        prefix=prefix,
        customer=item.customer,
        operation=item.operation,
        sync_ms=limit.sync_ms or 1,
        cap=settings.DECISION_LOG_MAX_PER_SLOT,
    )


def _new_counter(limit: LimitConfig, spec: LimitSpec, key: str, record: str | None, item: CheckItem) -> Counted:
    if len(_counters) >= MAX_COUNTERS:
        _counters.clear()
    windows = windows_of(limit, item.timezone)
    start, end = windows(CLOCK.now_ms())
    variant = SLIDING if ALGORITHMS[limit.algorithm].hybrid == SLIDING else FIXED
    config = HybridConfig(limit=limit.quantity, sync_ms=limit.sync_ms or 1, variant=variant)
    peers = peers_for(RETENTION_WINDOWS * (end - start))
    bounds: dict[str, Any] = {"cap": limit.quantity, "recorded": recorded_of(record)}
    # The embedded store (MemoryPeers, one process) logs no exchange: there is no stream to drain.
    if isinstance(peers, RedisPeers):
        exchange = _counted(peers.exchange_for(key, INSTANCE, exchange_log(limit, spec, item), **bounds))
    else:
        exchange = _counted(peers.exchange_for(key, INSTANCE, **bounds))
    counted = Counted(HybridCounter(config, windows, exchange, CLOCK.now_ms), record)
    _counters[(limit, key)] = counted
    _ticker_start()
    return counted


def _counted(exchange: Exchange) -> Exchange:
    """`exchange`, its outcomes counted in /metrics (quota_hybrid_exchanges): a failed one leaves the counter
    deciding on the counts it last had (docs/hybrid.md, edge case 1), which operators should see."""

    def counted(start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
        try:
            answer = exchange(start, prev_start, own, own_prev)
        except Exception:
            metrics.hybrid_exchange_counted(ok=False)
            raise
        metrics.hybrid_exchange_counted(ok=True)
        return answer

    return counted


def windows_of(limit: LimitConfig, timezone: str) -> Windows:
    if is_calendar(limit.algorithm):
        period = limit.calendar_period or "day"
        return lambda now: pick_window(window_bounds(now, timezone, period), now)
    return fixed_windows((limit.period_s or 1) * 1000)


def hybrid_tick() -> None:
    """Exchange for every counter whose interval or window ended (counters gone quiet report too)."""
    for counted in list(_counters.values()):
        counted.counter.sync_if_due()


def _ticker_start() -> None:
    global _ticker
    if _ticker is not None:
        return
    from apps.common.background import PeriodicThread

    _ticker = PeriodicThread("hybrid-exchange", hybrid_tick, lambda: TICK_S)
    _ticker.start()


def hybrid_reset() -> None:
    """Forget every counter (tests; a new snapshot keeps them: a limit's config is part of the key)."""
    _counters.clear()
    peers_reset()
