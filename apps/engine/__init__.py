"""The rate-limit engine: pure Python + a Redis client, no Django.

    store = RedisStore(redis.Redis(...), key_prefix="quota")   # or MemoryStore() in-process
    decision = store.check(CheckItem(customer="acct-1", operation="PutRecords", costs={"records": 500}), limits)

Every check (or batch) is one atomic step: admitted only if every enforced limit admits, usage
counted in the same step, time taken from Redis (or the injected clock in tests).
"""

from apps.engine.clock import Clock, ManualClock, SystemClock
from apps.engine.keys import KeyLayout, lease_owner
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.zoned_windows import window_bounds
from apps.engine.registry import ALGORITHM_NAMES, ALGORITHMS
from apps.engine.store.base import Store, UsageRow
from apps.engine.store.memory import MemoryStore
from apps.engine.types import (
    BatchMode,
    CheckItem,
    Decision,
    IdempotencyKeyReused,
    InvalidCheck,
    LimitResult,
    Resynced,
    ResyncTooLarge,
)

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_NAMES",
    "BatchMode",
    "CheckItem",
    "Clock",
    "Decision",
    "IdempotencyKeyReused",
    "InvalidCheck",
    "KeyLayout",
    "LimitResult",
    "LimitSpec",
    "ManualClock",
    "MemoryStore",
    "ResyncTooLarge",
    "Resynced",
    "Store",
    "SystemClock",
    "UsageRow",
    "lease_owner",
    "window_bounds",
]
