"""Calendar quota: at most `quantity` units per local day, ISO week or month of a time zone.

Windows are computed with zoneinfo, so a day in Europe/Berlin lasts 23 or 25 hours on DST days.
Lua has no time zones: `window_bounds` gives the script four boundaries around the caller's idea
of now (previous, current, next window) and the script picks the one containing Redis time with
`pick_window`. State and decisions are those of a fixed window over [start, end).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apps.engine.reference import fixed_window
from apps.engine.reference.base import Params
from apps.engine.types import InvalidCheck

State = tuple[int, int]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_cache: dict[tuple[str, str], tuple[int, ...]] = {}


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise InvalidCheck(f"unknown time zone {name!r}") from error


def _first_day(day: date, period: str) -> date:
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    return day


def _shift(day: date, period: str, count: int) -> date:
    if period == "day":
        return day + timedelta(days=count)
    if period == "week":
        return day + timedelta(weeks=count)
    months = day.year * 12 + day.month - 1 + count
    return date(months // 12, months % 12 + 1, 1)


def _midnight_ms(day: date, zone: ZoneInfo) -> int:
    # fold=0: a midnight skipped by a DST gap maps to the transition instant, the day's first moment.
    return (datetime(day.year, day.month, day.day, tzinfo=zone) - _EPOCH) // _MS


def window_bounds(now: int, timezone: str, period: str) -> tuple[int, ...]:
    """Four epoch-ms boundaries: starts of the previous, current, next and following windows."""
    cached = _cache.get((timezone, period))
    if cached is not None and cached[1] <= now < cached[2]:
        return cached
    zone = _zone(timezone)
    local = datetime.fromtimestamp(now // 1000, tz=zone).date()
    first = _first_day(local, period)
    bounds = tuple(_midnight_ms(_shift(first, period, shift), zone) for shift in (-1, 0, 1, 2))
    _cache[(timezone, period)] = bounds
    return bounds


def pick_window(bounds: tuple[int, ...], now: int) -> tuple[int, int]:
    """The [start, end) among `bounds` containing `now` (clamped to the first/last one)."""
    index = 0
    while index < len(bounds) - 2 and bounds[index + 1] <= now:
        index += 1
    return bounds[index], bounds[index + 1]


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when the window still has `cost` units; otherwise retry when the next window starts."""
    if cost > params.quantity:
        return False, None
    start, end = params.window
    _, used = fixed_window.current(state, start)
    if used + cost <= params.quantity:
        return True, 0
    return False, max(1, end - now)


def consume(state: State | None, params: Params, now: int, cost: int, lease: object = None) -> State:
    """Add `cost` to the current window."""
    start, used = fixed_window.current(state, params.window[0])
    return (start, used + cost)


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Units left in the window and milliseconds until it ends."""
    _, used = fixed_window.current(state, params.window[0])
    return max(0, params.quantity - used), max(0, params.window[1] - now)


def expires_at(state: State, params: Params, now: int) -> int:
    """The window's end."""
    return params.window[1]
