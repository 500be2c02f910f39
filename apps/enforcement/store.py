"""This process's engine store: Redis when REDIS_URL is set, else the in-process reference store.

The Redis client comes from django-redis, so the cache and the engine share one connection pool.
Tests swap the store (own key prefix, a ManualClock) with engine_store_use().
"""

from __future__ import annotations

import threading

from django.conf import settings

from apps.engine import MemoryStore, Store
from apps.engine.store.redis import RedisStore

_store: Store | None = None
_lock = threading.Lock()


def _build_store() -> Store:
    if settings.REDIS_URL:
        from django_redis import get_redis_connection

        return RedisStore(get_redis_connection("default"), key_prefix=settings.QUOTA_KEY_PREFIX)
    # Embedded default: counters live in this process (make run serves with one worker).
    return MemoryStore(key_prefix=settings.QUOTA_KEY_PREFIX)


def engine_store() -> Store:
    global _store
    if _store is None:
        with _lock:
            if _store is None:
                _store = _build_store()
    return _store


def engine_store_use(store: Store | None) -> None:
    """Replace this process's store (tests); None rebuilds it from settings on next use."""
    global _store
    _store = store
