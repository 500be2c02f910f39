"""Calendar quotas follow the customer's time zone, across DST changes and month ends."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.base import Store

HOUR = 3_600_000


def ms(text: str, zone: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).astimezone(UTC).timestamp() * 1000)


def daily(quantity: int, period: str = "day") -> list[LimitSpec]:
    return [LimitSpec("daily", "calendar", quantity, calendar_period=period, key_by=("customer", "resource"))]


def modify(zone: str) -> CheckItem:
    return CheckItem("acct-1", "ModifyShardCount", resource="stream-1", timezone=zone)


def test_ten_per_day_resets_at_local_midnight_on_a_23_hour_dst_day(store: Store, clock: ManualClock) -> None:
    clock.set(ms("2024-03-31T00:30", "Europe/Berlin"))
    decisions = [store.check(modify("Europe/Berlin"), daily(10)) for _ in range(11)]
    assert [d.allowed for d in decisions] == [True] * 10 + [False]
    assert decisions[-1].retry_after_ms == 22 * HOUR + 30 * 60_000  # 23-hour day, 30 minutes in
    clock.set(ms("2024-03-31T23:59:59.999", "Europe/Berlin"))
    assert not store.check(modify("Europe/Berlin"), daily(10)).allowed
    clock.advance(1)
    assert store.check(modify("Europe/Berlin"), daily(10)).allowed


def test_a_25_hour_day_counts_as_one_window(store: Store, clock: ManualClock) -> None:
    clock.set(ms("2024-10-27T00:10", "Europe/Berlin"))
    assert store.check(modify("Europe/Berlin"), daily(1)).allowed
    clock.set(ms("2024-10-27T23:50", "Europe/Berlin"))  # 24 h 40 min later, still the same local day
    denied = store.check(modify("Europe/Berlin"), daily(1))
    assert not denied.allowed
    assert denied.retry_after_ms == 10 * 60_000


def test_a_monthly_quota_turns_over_at_local_midnight_not_utc(store: Store, clock: ManualClock) -> None:
    clock.set(ms("2024-01-31T23:00", "America/New_York"))  # already February in UTC
    assert store.check(modify("America/New_York"), daily(1, "month")).allowed
    denied = store.check(modify("America/New_York"), daily(1, "month"))
    assert denied.retry_after_ms == HOUR
    assert denied.limits[0].reset_ms == HOUR
    clock.advance(HOUR)
    assert store.check(modify("America/New_York"), daily(1, "month")).allowed


def test_each_customer_follows_its_own_zone(store: Store, clock: ManualClock) -> None:
    clock.set(ms("2024-06-01T10:00", "UTC"))
    tokyo = store.check(modify("Asia/Tokyo"), daily(1))
    assert tokyo.limits[0].reset_ms == 5 * HOUR  # 19:00 in Tokyo
    lima = CheckItem("acct-2", "ModifyShardCount", resource="stream-1", timezone="America/Lima")
    assert store.check(lima, daily(1)).limits[0].reset_ms == 19 * HOUR  # 05:00 in Lima
