"""The `database` failure policy: counting in PostgreSQL while Redis is away, from what was already spent.

Each limit of a minute or longer is counted in its own window, minute-aligned (calendar limits keep their calendar
window). A limit of less than a minute is not counted here: scaled to a minute, a 10-per-second limit would admit
600 in one second, so it is enforced at its own period as each process's share instead (the `local` policy's code,
decide.py; `minute_grain`). The window's row starts
from what the counter's records already hold for the window (apps/usage CounterRecord: what Redis flushed,
and what earlier outages admitted), and is raised to them again at every check, so a day 9/10 used before
the outage admits 1 during it. What it admits is added to the same records, so the counter rebuilt in Redis
after the outage counts it too (recovery.py).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection

from apps.enforcement.counters.recovery import Spending
from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.models import FallbackCounter
from apps.engine import CheckItem, KeyLayout, LimitResult, window_bounds
from apps.engine.decision_usage import record_start
from apps.limits.snapshot import LimitConfig
from apps.usage.models import CounterRecord

MINUTE_MS = 60_000
fallback_layout = KeyLayout("fallback")  # the policy's window keys: a counter key under its own prefix

# Start the window's row from the counter's records, or raise it to them (they grow as Redis is flushed).
BASELINE_SQL = (
    "INSERT INTO {table} (key, window_start, window_end, used) VALUES (%s, %s, %s, "
    "(SELECT COALESCE(SUM(amount), 0) FROM {records} WHERE counter = %s AND start_ms >= %s AND start_ms < %s)) "
    "ON CONFLICT (key, window_start) DO UPDATE SET used = CASE WHEN excluded.used > {table}.used "
    "THEN excluded.used ELSE {table}.used END"
)
SPEND_SQL = (
    "UPDATE {table} SET used = used + %s WHERE key = %s AND window_start = %s AND used + %s <= %s RETURNING used"
)


class Refused(Exception):
    """A limit refused: rolls the policy's transaction back. args: (the limit's result, never admissible)."""


@dataclass(frozen=True)
class Window:
    start_ms: int
    end_ms: int
    quantity: int


def minute_grain(limit: LimitConfig) -> bool:
    """The limit is counted in PostgreSQL while Redis is away: a calendar limit, or a period of a minute or more."""
    return bool(limit.calendar_period) or (limit.period_s or 60) * 1000 >= MINUTE_MS


def database_window(limit: LimitConfig, timezone: str, now_ms: int) -> Window:
    if limit.calendar_period:
        bounds = window_bounds(now_ms, timezone, limit.calendar_period)
        return Window(bounds[1], bounds[2], limit.quantity)
    period_ms = (limit.period_s or 60) * 1000
    start = now_ms - now_ms % period_ms
    return Window(start, start + period_ms, limit.quantity)


def database_spend(item: CheckItem, limit: LimitConfig, now_ms: int, spending: Spending) -> LimitResult:
    """Count `item` against `limit` in its window (inside the caller's transaction); raises Refused."""
    window = database_window(limit, item.timezone, now_ms)
    spec = limit_spec_of(limit)
    key = fallback_layout.counter_keys(spec, item)[0]
    counter, cost = fallback_layout.counter_id(key), item.cost_of(limit.unit)
    used = _spend(key, counter, window, cost)
    over = used is None or cost > window.quantity
    remaining = 0 if used is None else max(window.quantity - used, 0)
    result = LimitResult(
        limit.name, limit.algorithm, limit.unit, window.quantity, remaining, window.end_ms - now_ms, False, over
    )
    if over:
        raise Refused(result, cost > window.quantity)
    if cost > 0 and spec.durable:
        spending.add(counter, record_start(spec, item, now_ms), cost)
    return result


def _spend(key: str, counter: str, window: Window, cost: int) -> int | None:
    """The window's count after spending `cost`, or None when it does not fit."""
    table = connection.ops.quote_name(FallbackCounter._meta.db_table)
    records = connection.ops.quote_name(CounterRecord._meta.db_table)
    start, end = _moment(window.start_ms), _moment(window.end_ms)
    with connection.cursor() as cursor:
        cursor.execute(
            BASELINE_SQL.format(table=table, records=records),
            [key, start, end, counter, window.start_ms, window.end_ms],
        )
        cursor.execute(SPEND_SQL.format(table=table), [cost, key, start, cost, window.quantity])
        row = cursor.fetchone()
    return int(row[0]) if row else None


def _moment(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
