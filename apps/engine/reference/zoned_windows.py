"""Windows cut by a calendar in a time zone: a local day, ISO week or month.

Windows are computed with zoneinfo, so a day in Europe/Berlin lasts 23 or 25 hours on DST days.
Lua has no time zones: `window_bounds` gives the script four boundaries around the caller's idea
of now (previous, current, next window) and the script picks the one containing Redis time with
`pick_window`. The algorithms whose entry says calendar_windows count in them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apps.engine.types import InvalidCheck

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
