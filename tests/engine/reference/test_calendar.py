from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from apps.engine.reference import calendar, zoned_windows
from apps.engine.reference.base import Params

HOUR = 3_600_000


def ms(text: str, zone: str = "UTC") -> int:
    moment = datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))
    return int(moment.astimezone(UTC).timestamp() * 1000)


def window(now: int, zone: str, period: str) -> tuple[int, int]:
    return zoned_windows.pick_window(zoned_windows.window_bounds(now, zone, period), now)


def test_a_berlin_day_lasts_23_hours_when_dst_starts_and_25_when_it_ends() -> None:
    start, end = window(ms("2024-03-31T12:00", "Europe/Berlin"), "Europe/Berlin", "day")
    assert (start, end - start) == (ms("2024-03-31T00:00", "Europe/Berlin"), 23 * HOUR)
    start, end = window(ms("2024-10-27T12:00", "Europe/Berlin"), "Europe/Berlin", "day")
    assert (start, end - start) == (ms("2024-10-27T00:00", "Europe/Berlin"), 25 * HOUR)


def test_a_month_ends_at_local_midnight_not_utc_midnight() -> None:
    start, end = window(ms("2024-01-31T23:30", "America/New_York"), "America/New_York", "month")
    assert start == ms("2024-01-01T00:00", "America/New_York")
    assert end == ms("2024-02-01T00:00", "America/New_York") == ms("2024-02-01T05:00")


def test_a_week_starts_on_monday() -> None:
    start, end = window(ms("2024-03-31T22:00", "Europe/Berlin"), "Europe/Berlin", "week")  # a Sunday
    assert start == ms("2024-03-25T00:00", "Europe/Berlin")
    assert end - start == 7 * 24 * HOUR - HOUR  # the DST change falls inside this week


def test_a_midnight_skipped_by_dst_starts_the_day_at_the_transition() -> None:
    # Santiago moved its clocks from 24:00 to 01:00 on 2024-09-08: that day has no midnight.
    start, end = window(ms("2024-09-08T12:00", "America/Santiago"), "America/Santiago", "day")
    assert start == ms("2024-09-08T04:00")
    assert end - start == 23 * HOUR


@pytest.mark.parametrize("period", ["day", "week", "month"])
def test_bounds_are_increasing_and_surround_now(period: str) -> None:
    now = ms("2024-10-27T02:30", "Europe/Berlin")
    bounds = zoned_windows.window_bounds(now, "Europe/Berlin", period)
    assert list(bounds) == sorted(set(bounds))
    assert len(bounds) == 4
    assert bounds[1] <= now < bounds[2]


def test_evaluate_rejects_until_the_next_local_window() -> None:
    now = ms("2024-01-31T23:30", "America/New_York")
    params = Params(quantity=2, period_ms=0, capacity=2, window=window(now, "America/New_York", "month"))
    state = calendar.consume(None, params, now, 2)
    assert calendar.evaluate(state, params, now, 1) == (False, 30 * 60_000)
    assert calendar.evaluate(state, params, now, 3) == (False, None)
    assert calendar.report(state, params, now) == (0, 30 * 60_000)


def test_pick_window_clamps_when_now_is_outside_the_bounds() -> None:
    assert zoned_windows.pick_window((10, 20, 30, 40), 5) == (10, 20)
    assert zoned_windows.pick_window((10, 20, 30, 40), 45) == (30, 40)
