"""check.lua and the warm mark (keys.py): once the epoch is marked warm a missing durable counter is new (no seed
asked); a mark without its epoch counts for nothing (the epoch went with a loss or a reset)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.durability import History
from apps.engine.store.redis import RedisStore
from apps.engine.types import SeedRequest
from tests.engine.conftest import START_MS

DAILY = LimitSpec("daily", "calendar", 10, calendar_period="day", key_by=("customer",), durable=True)
CHECK = CheckItem("acct-1", "Op")


class Seeder:
    def __init__(self) -> None:
        self.asked: list[SeedRequest] = []

    def __call__(self, requests: Sequence[SeedRequest]) -> list[History]:
        self.asked += requests
        return [[(START_MS, 3)] for _ in requests]  # a day window: its bucket is its start


@pytest.fixture
def seeder() -> Seeder:
    return Seeder()


@pytest.fixture
def store(redis_client, key_prefix, seeder) -> RedisStore:
    return RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS + 3_600_000), seeder=seeder)


def test_a_missing_counter_of_a_warm_epoch_is_new(store, seeder, redis_client, key_prefix) -> None:
    redis_client.set(f"{key_prefix}:epoch", START_MS + 1000, px=60_000)
    redis_client.set(f"{key_prefix}:warm", START_MS + 1000, px=60_000)

    assert store.check(CHECK, [DAILY]).limits[0].remaining == 9
    assert seeder.asked == []


def test_without_the_mark_it_is_seeded(store, seeder, redis_client, key_prefix) -> None:
    redis_client.set(f"{key_prefix}:epoch", START_MS + 1000, px=60_000)

    assert store.check(CHECK, [DAILY]).limits[0].remaining == 6
    assert len(seeder.asked) == 1


def test_a_mark_without_its_epoch_counts_for_nothing(store, seeder, redis_client, key_prefix) -> None:
    redis_client.set(f"{key_prefix}:warm", START_MS + 1000, px=60_000)

    assert store.check(CHECK, [DAILY]).limits[0].remaining == 6
    assert len(seeder.asked) == 1
    assert redis_client.exists(f"{key_prefix}:epoch") == 1
