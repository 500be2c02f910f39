"""What the warm-up tests share: durable limits of every durable algorithm, their records in PostgreSQL, a store that
counts its script calls and its seeder's, and Redis emptied as by a restart without persistence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.decisions.specs import limit_spec_of
from apps.engine import CheckItem, KeyLayout, LimitSpec
from apps.engine.algorithms.base import Durability
from apps.engine.durability import History, record_bucket
from apps.engine.registry import ALGORITHMS
from apps.engine.store.plan import plan_item
from apps.engine.store.redis import RedisStore
from apps.engine.types import SeedRequest
from apps.limits.snapshot_holder import snapshot_current
from apps.usage.services import counter_records_add
from tests.limits.factories import CalendarLimitFactory, LimitFactory

DURABLE = [name for name, entry in ALGORITHMS.items() if isinstance(entry.durability, Durability)]
HOUR_MS = 3_600_000


def durable_limit(algorithm: str, **changes: Any) -> Any:
    """A limit of `algorithm` (an hour, or a day for calendar) that the platform makes durable."""
    changes = {"quantity": 50, **changes}
    if algorithm == "calendar":
        return CalendarLimitFactory(**changes)
    return LimitFactory(algorithm=algorithm, period_seconds=3600, **changes)


def spec_of(limit: Any) -> LimitSpec:
    (config,) = snapshot_current().limits_named(limit.name, limit.algorithm)
    spec = limit_spec_of(config)
    assert spec.durable
    return spec


def record_spending(layout: KeyLayout, spec: LimitSpec, item: CheckItem, spent: Sequence[tuple[int, int]]) -> str:
    """Add records of `spent` ((time ms, amount) pairs) on `spec`'s counter for `item`, as the flush adds what checks
    spent; the counter's name."""
    plan = plan_item(layout, item, [spec], spent[0][0]).limits[0]
    records: dict[tuple[str, int], int] = {}
    for at, amount in spent:
        bucket = record_bucket(spec, plan.params(at), at)
        records[(plan.counter, bucket)] = records.get((plan.counter, bucket), 0) + amount
    counter_records_add(records=records)
    return plan.counter


@dataclass
class CountingSeeder:
    """The production seeder, counting what it is asked."""

    asked: list[SeedRequest] = field(default_factory=list)

    def __call__(self, requests: Sequence[SeedRequest]) -> list[History]:
        self.asked += requests
        return usage_seeds(requests)


class CallCounting:
    """Counts a store's check script calls: check.lua's (_eval) and its shaped scripts' (store/shaped.py)."""

    calls = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shaped_call = self._shaped._call  # type: ignore[attr-defined]

        def counted(*call: Any) -> Any:
            self.calls += 1
            return shaped_call(*call)

        self._shaped._call = counted  # type: ignore[attr-defined]

    def _eval(self, client: Any, keys: list[str], args: list[Any]) -> list[list[Any]]:
        self.calls += 1
        return super()._eval(client, keys, args)  # type: ignore[misc]


class CountingStore(CallCounting, RedisStore):
    """A RedisStore counting its check script calls."""


def lose_redis(redis_client: Any, key_prefix: str) -> None:
    """What a restart without persistence leaves of the store's keys: none."""
    keys = list(redis_client.scan_iter(match=f"{key_prefix}:*", count=1000))
    if keys:
        redis_client.delete(*keys)


def counter_state(redis_client: Any, layout: KeyLayout, counter: str) -> tuple[Any, ...]:
    """What Redis holds of a counter: its string, or a log's set (with times) and its sum."""
    keys = layout.keys_of_counter(counter)
    if len(keys) == 1:
        return (redis_client.get(keys[0]),)
    return tuple(redis_client.zrange(keys[0], 0, -1, withscores=True)), redis_client.get(keys[1])
