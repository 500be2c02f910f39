"""A production-like platform for the hostile corpus: gunicorn with the production config on the test
database, once with this module's Redis key prefix and once with Redis unreachable."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from tests.servers import free_port
from tests.support.database import database_flush
from tests.support.live_server import LiveServer

CONFIG_YAML = """
operations:
  - {name: Guarded}
  - {name: Guarded2}
  - {name: Hold}
  - {name: Pool}
customers:
  - {id: hostile-1}
  - {id: hostile-2}
limits:
  - {name: guarded-db, operation: Guarded, algorithm: fixed_window, limit: 100, period: minute, key_by: [customer],
     on_store_failure: database}
  - {name: guarded-daily, operation: Guarded, algorithm: calendar, limit: 1000, period: day,
     key_by: [customer, resource], on_store_failure: database}
  - {name: guarded2, operation: Guarded2, algorithm: sliding_window, limit: 10, period: minute, key_by: [customer]}
  - {name: slots, operation: Hold, algorithm: concurrency, limit: 5, period: hour, key_by: [customer]}
  - {name: pool, operation: Pool, algorithm: concurrency, limit: 50, period: hour, key_by: []}
services:
  - {name: hostile-tests, operations: []}
"""
ENV = {
    "QUOTA_BOOKKEEPING_FLUSH_S": "0",
    "QUOTA_HEARTBEAT_S": "0",
    "QUOTA_LEDGER_FLUSH_S": "0.2",  # a degraded decision would reach PostgreSQL at once: nothing may
    "QUOTA_REDIS_TIMEOUT_MS": "50",
}


@dataclass(frozen=True)
class Platform:
    url: str
    key: str
    redis_url: str | None
    key_prefix: str


@pytest.fixture(scope="module")
def configured(django_db_setup, django_db_blocker) -> Iterator[str]:
    """The configuration, committed (the server is another process); the database is flushed afterwards."""

    from apps.apikeys.models import Service
    from apps.apikeys.services import api_key_create
    from apps.limits.config_io import config_import, config_yaml_load

    with django_db_blocker.unblock():
        config_import(document=config_yaml_load(CONFIG_YAML))
        key = api_key_create(service=Service.objects.get(name="hostile-tests")).secret
    yield key
    with django_db_blocker.unblock():
        database_flush()


@pytest.fixture(scope="module")
def platform(configured, redis_url, tmp_path_factory) -> Iterator[Platform]:
    prefix = f"test-hostile-{uuid.uuid4().hex[:8]}"
    with LiveServer(tmp_path_factory.mktemp("up"), redis_url=redis_url, key_prefix=prefix, **ENV) as server:
        yield Platform(server.url, configured, redis_url, prefix)
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(scope="module")
def platform_without_redis(configured, tmp_path_factory) -> Iterator[Platform]:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    with LiveServer(tmp_path_factory.mktemp("down"), redis_url=dead, key_prefix="dead", **ENV) as server:
        yield Platform(server.url, configured, None, "dead")
