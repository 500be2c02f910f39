"""Durable counters: what a check records so a lost counter can be rebuilt, and how it is rebuilt.

A durable limit (LimitSpec.durable: its algorithm's entry declares a Durability) records what each
admitted check spent on its counter, in the same step as the decision: an amount per counter and
*bucket*, added to the usage the store collects (one `record_field` per counter and bucket). The bucket is
the counter's window for window algorithms, and the UTC minute for those whose state depends on when within
the window units were spent (each entry's Durability says which). `reach_ms` says how long after its bucket
a record can still matter to a rebuild.

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

from apps.engine.algorithms.base import Durability
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params
from apps.engine.types import MINUTE_MS

# What a seeder answers per counter: (bucket start ms, amount), in any order.
History = Sequence[tuple[int, int]]


def durability_of(spec: LimitSpec) -> Durability:
    """The entry's declaration of how `spec`'s counter is recorded and rebuilt; ValueError when it is not durable."""
    durability = spec.entry.durability
    if not isinstance(durability, Durability):
        raise ValueError(f"{spec.algorithm} counters are not durable")
    return durability


def record_bucket(spec: LimitSpec, params: Params, now: int) -> int:
    """The start of the bucket a check at `now` adds its spending to."""
    return durability_of(spec).record_bucket(spec, params, now)


def reach_ms(spec: LimitSpec) -> int:
    """How long after its bucket starts a record can still shape the counter (calendar: its longest window)."""
    return durability_of(spec).reach_ms(spec)


def lookback_start(spec: LimitSpec, params: Params, now: int) -> int:
    """The earliest time whose spending still shapes the counter at `now`: its history starts there."""
    return durability_of(spec).lookback_start(spec, params, now)


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
    nothing was spent. Buckets outside the look-back or in the future are ignored. An algorithm declared
    NOT_DURABLE raises ValueError.
    """
    durability = durability_of(spec)
    model = spec.entry.model
    since = durability.lookback_start(spec, params, now)
    windowed = durability.windowed
    start_from = durability.replay_from
    state = start_from(spec, since) if start_from is not None and history else None
    for start, amount in sorted(history):
        # A window's record starts at the window; a minute's counts while any of the minute is in reach.
        ends = start + (1 if windowed else MINUTE_MS)
        if amount <= 0 or start > now or ends <= since:
            continue
        spent_at = start if windowed else min(start + MINUTE_MS - 1, now)
        state = model.consume(state, params, spent_at, amount)
    return state
