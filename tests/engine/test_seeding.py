"""Re-seeding after a Redis data loss: a missing window counter is asked of the seeder once, never otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import redis

from apps.engine import CheckItem, InvalidCheck, LimitSpec, ManualClock
from apps.engine.store.redis import RedisStore
from apps.engine.types import SeedRequest
from tests.engine.conftest import START_MS
from tests.engine.test_round_trips import seen_by_redis, sent

HOUR_MS = 3_600_000
DAILY = LimitSpec("daily", "calendar", 10, calendar_period="day", key_by=("customer",), seedable=True)
HOURLY = LimitSpec("hourly", "fixed_window", 100, period_s=3600, key_by=("customer",), seedable=True)
CHECK = CheckItem("acct-1", "ModifyShardCount")


class RecordedUsage:
    """The seeder: answers `used` per customer and records what it was asked."""

    def __init__(self, used: dict[str, int] | None = None) -> None:
        self.used = used or {}
        self.asked: list[SeedRequest] = []

    def __call__(self, requests: Sequence[SeedRequest]) -> list[int]:
        self.asked += requests
        return [self.used.get(request.item.customer, 0) for request in requests]


@pytest.fixture
def seeder() -> RecordedUsage:
    return RecordedUsage({"acct-1": 6, "acct-2": 2})


@pytest.fixture
def midday() -> ManualClock:
    return ManualClock(START_MS + 12 * HOUR_MS)


@pytest.fixture
def store(redis_client: redis.Redis, key_prefix: str, midday: ManualClock, seeder: RecordedUsage) -> RedisStore:
    return RedisStore(redis_client, key_prefix, clock=midday, seeder=seeder)


@pytest.fixture
def lose_redis(redis_client: redis.Redis, key_prefix: str) -> Callable[[], None]:
    """Deletes every key of this test, as a Redis restart without persistence (or FLUSHALL) would."""

    def lose() -> None:
        keys = list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000))
        assert keys, "nothing to lose"
        redis_client.delete(*keys)

    return lose


def remaining(store: RedisStore, item: CheckItem = CHECK, limits: Sequence[LimitSpec] = (DAILY,)) -> int:
    return store.check(item, limits).limits[0].remaining


def test_a_counter_lost_with_its_window_open_resumes_from_the_recorded_usage(store, seeder, lose_redis) -> None:
    assert remaining(store) == 10 - 6 - 1
    assert [(r.spec.name, r.item.customer, r.window_start_ms) for r in seeder.asked] == [("daily", "acct-1", START_MS)]
    assert remaining(store) == 2  # the counter exists now: not asked again
    assert len(seeder.asked) == 1

    seeder.used["acct-1"] = 8  # 6 + the 2 admitted, flushed before the loss
    lose_redis()
    assert remaining(store) == 10 - 8 - 1
    assert len(seeder.asked) == 2


def test_a_window_that_opens_after_the_epoch_is_never_seeded(store, seeder, midday) -> None:
    remaining(store)
    midday.advance(24 * HOUR_MS)
    assert remaining(store) == 9
    assert len(seeder.asked) == 1


def test_a_seed_that_fills_the_window_denies_and_is_kept(store, seeder) -> None:
    seeder.used["acct-1"] = 10
    decision = store.check(CHECK, [DAILY])
    assert not decision.allowed
    assert decision.retry_after_ms == 12 * HOUR_MS
    assert not store.check(CHECK, [DAILY]).allowed
    assert len(seeder.asked) == 1


def test_fixed_windows_are_seeded_for_their_own_window(store, seeder, midday) -> None:
    midday.advance(HOUR_MS // 2)
    assert remaining(store, limits=[HOURLY]) == 100 - 6 - 1
    assert seeder.asked[0].window_start_ms == START_MS + 12 * HOUR_MS
    assert seeder.asked[0].now_ms == midday.now_ms()


def test_each_missing_counter_of_a_batch_gets_its_own_seed(store, seeder) -> None:
    pairs = [(CheckItem(customer, "ModifyShardCount"), [DAILY]) for customer in ("acct-1", "acct-2", "acct-1")]
    decisions = store.check_batch(pairs)
    assert [d.limits[0].remaining for d in decisions] == [3, 7, 2]
    assert sorted(r.item.customer for r in seeder.asked) == ["acct-1", "acct-2"]


def test_limits_not_marked_seedable_are_never_asked(store, seeder) -> None:
    plain = LimitSpec("plain", "calendar", 10, calendar_period="day", key_by=("customer",))
    assert remaining(store, limits=[plain]) == 9
    assert seeder.asked == []


def test_without_a_seeder_a_lost_counter_starts_empty(redis_client, key_prefix, midday) -> None:
    store = RedisStore(redis_client, key_prefix, clock=midday)
    assert remaining(store) == 9


@pytest.mark.parametrize(
    "spec",
    [
        dict(algorithm="sliding_window", period_s=3600),
        dict(algorithm="token_bucket", period_s=3600),
        dict(algorithm="fixed_window", period_s=59),
    ],
)
def test_only_windows_of_a_minute_or_longer_can_be_seedable(spec) -> None:
    with pytest.raises(InvalidCheck, match="re-seeded"):
        LimitSpec("x", quantity=10, seedable=True, **spec)


def test_seeding_costs_one_more_round_trip_once_and_none_after(redis_url, key_prefix, midday, seeder) -> None:
    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    store = RedisStore(client, key_prefix, clock=midday, seeder=seeder)
    store.load_scripts()
    try:
        assert sent(seen_by_redis(redis_url, client, lambda: store.check(CHECK, [DAILY]))) == ["EVALSHA", "EVALSHA"]
        assert sent(seen_by_redis(redis_url, client, lambda: store.check(CHECK, [DAILY]))) == ["EVALSHA"]
    finally:
        client.close()
