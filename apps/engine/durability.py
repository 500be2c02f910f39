"""Durable counters: what a check records so a lost counter can be rebuilt, and how it is rebuilt.

A durable limit (LimitSpec.durable: a window, log or bucket of a minute or longer) records what each
admitted check spent on its counter, in the same step as the decision: an amount per counter and
*bucket*, added to the usage the store collects (one `record_field` per counter and bucket). The bucket is
the counter's window for fixed windows, calendar quotas and sliding window counters, and the UTC minute for
sliding logs and buckets, whose state depends on when within the window units were spent. `reach_ms` says
how long after its bucket a record can still matter to a rebuild.

When a durable counter is missing (Redis lost its data, or an operator deleted it) and its look-back
began before the store's epoch, the store asks its seeder for the counter's history since the
look-back start and rebuilds the state by replaying it through the reference model: each bucket's
amount is spent at the bucket's last millisecond (never later than now). That is exact for windows
and counters of windows, and never under-counts a log or a bucket: an amount replayed later than it
was spent stays in the window longer, so a rebuilt counter errs on the side of refusing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apps.engine.reference.base import Params, ceil_div
from apps.engine.registry import ALGORITHMS
from apps.engine.types import (
    BUCKETS,
    CALENDAR,
    FIXED_WINDOW,
    LEAKY_BUCKET,
    MAX_WAIT_MS,
    MINUTE_MS,
    SLIDING_LOG,
    SLIDING_WINDOW,
    LimitSpec,
)

# What a seeder answers per counter: (bucket start ms, amount), in any order.
History = Sequence[tuple[int, int]]
DAY_MS = 86_400_000
# The longest calendar window, with a daylight-saving hour to spare.
CALENDAR_LONGEST_MS = {"day": DAY_MS + 3_600_000, "week": 7 * DAY_MS + 3_600_000, "month": 31 * DAY_MS + 3_600_000}


def full_level(spec: LimitSpec) -> int:
    """A bucket's highest level (meter.py's units): its capacity, and for a leaky bucket (a shaper) what a
    check waiting the longest (MAX_WAIT_MS) may queue above it."""
    queued = MAX_WAIT_MS * spec.quantity if spec.algorithm == LEAKY_BUCKET else 0
    return spec.capacity * spec.period_ms + queued


def drain_ms(spec: LimitSpec) -> int:
    """How long a full bucket takes to drain empty (a bucket looks back twice as far: see `rebuild`)."""
    return ceil_div(full_level(spec), spec.quantity)


def record_bucket(spec: LimitSpec, params: Params, now: int) -> int:
    """The start of the bucket a check at `now` adds its spending to."""
    if spec.algorithm == CALENDAR:
        return params.window[0]
    if spec.algorithm in (FIXED_WINDOW, SLIDING_WINDOW):
        return now - now % spec.period_ms
    return now - now % MINUTE_MS


def reach_ms(spec: LimitSpec) -> int:
    """How long after its bucket starts a record can still shape the counter (calendar: its longest window)."""
    if spec.algorithm == CALENDAR:
        return CALENDAR_LONGEST_MS[spec.calendar_period or "month"]
    if spec.algorithm == FIXED_WINDOW:
        return spec.period_ms
    if spec.algorithm == SLIDING_WINDOW:
        return 2 * spec.period_ms
    return MINUTE_MS + (spec.period_ms if spec.algorithm == SLIDING_LOG else 2 * drain_ms(spec))


def lookback_start(spec: LimitSpec, params: Params, now: int) -> int:
    """The earliest time whose spending still shapes the counter at `now`: its history starts there."""
    if spec.algorithm == CALENDAR:
        return params.window[0]
    if spec.algorithm == FIXED_WINDOW:
        return now - now % spec.period_ms
    if spec.algorithm == SLIDING_WINDOW:
        return now - now % spec.period_ms - spec.period_ms
    return now - (spec.period_ms if spec.algorithm == SLIDING_LOG else 2 * drain_ms(spec))


def record_field(key: str, start: int) -> str:
    """The usage field that adds what checks spent on counter `key` (a full key) in the bucket at `start`."""
    return f"{key}|{start}"


def is_record_field(name: str) -> bool:
    """Record fields are the usage fields holding a counter key (the others are plain names)."""
    return "|" in name


def parse_record_field(name: str) -> tuple[str, int]:
    """(counter key, bucket start) of a record field."""
    key, start = name.rsplit("|", 1)
    return key, int(start)


def rebuild(spec: LimitSpec, params: Params, history: History, now: int) -> Any:
    """The reference state of a counter whose spending since its look-back start is `history`; None if
    nothing was spent. Buckets outside the look-back or in the future are ignored.

    A bucket's level carries its whole past (a bucket kept full for hours still is), so its replay starts
    from a full bucket at the look-back start, two drain times back: never below the true level, and equal
    to it as soon as the true level touched zero in the last drain time (the assumed fill has drained by then).
    """
    model = ALGORITHMS[spec.algorithm].model
    since = lookback_start(spec, params, now)
    windowed = spec.algorithm in (CALENDAR, FIXED_WINDOW, SLIDING_WINDOW)
    full = (full_level(spec), since) if spec.algorithm in BUCKETS and history else None
    state = full
    for start, amount in sorted(history):
        # A window's record starts at the window; a minute's counts while any of the minute is in reach.
        ends = start + (1 if windowed else MINUTE_MS)
        if amount <= 0 or start > now or ends <= since:
            continue
        spent_at = start if windowed else min(start + MINUTE_MS - 1, now)
        state = model.consume(state, params, spent_at, amount)
    return state
